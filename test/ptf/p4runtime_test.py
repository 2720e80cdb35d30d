# SPDX-License-Identifier: Apache-2.0
"""P4Runtime base test for PTF, in the style of p4c's tools/ptf/base_test.py.

Test parameters (ptf --test-params="k='v';..."):
  grpcaddr   P4Runtime server, host:port (default 127.0.0.1:9559)
  device_id  P4Runtime device id (default 1)
  p4info     text-format P4Info (default p4src/ina.p4info.txtpb)
  config     device config pushed with the pipeline: BMv2 JSON, or bf-p4c's output directory (a
             Tofino's bf_switchd: packed in the PI form); empty or missing = empty bytes (the
             reference switch accepts any)
"""

import json
import logging
import os
import struct
import queue
import threading
import time

import grpc
import ptf
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from ptf import testutils
from ptf.base_tests import BaseTest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ELECTION_ID = (0, 1)


def encode(value, bitwidth):
    """An unsigned value as P4Runtime bytes, padded to the field's width."""
    nbytes = (bitwidth + 7) // 8
    if value < 0 or value >= 1 << bitwidth:
        raise ValueError("%d does not fit in %d bits" % (value, bitwidth))
    return value.to_bytes(nbytes, "big")


def last_component(name):
    return name.rsplit(".", 1)[-1]


def pi_device_config(out_dir):
    """bf_switchd's P4Runtime (PI) device config from bf-p4c's output directory: the program name,
    <pipe>/<target>.bin and <pipe>/context.json, each after its 4-byte little-endian length (the
    layout controlplane/devconfig builds, read through the same manifest.json)."""
    with open(os.path.join(out_dir, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    prog = manifest["programs"][0]
    context = os.path.join(out_dir, prog["pipes"][0]["files"]["context"]["path"])
    binary = os.path.join(os.path.dirname(context), manifest["target"] + ".bin")
    parts = [prog["program_name"].rsplit(".p4", 1)[0].encode()]
    for path in (binary, context):
        with open(path, "rb") as f:
            parts.append(f.read())
    return b"".join(struct.pack("<I", len(p)) + p for p in parts)


class P4RuntimeTest(BaseTest):
    """Connects as master, pushes the pipeline, and offers table, PRE and counter helpers."""

    def setUp(self):
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        self.device_id = int(testutils.test_param_get("device_id", 1))
        self.grpc_addr = testutils.test_param_get("grpcaddr", "127.0.0.1:9559")
        p4info_path = testutils.test_param_get("p4info", os.path.join(ROOT, "p4src", "ina.p4info.txtpb"))
        self.config_path = testutils.test_param_get("config", "")
        self.p4info = p4info_pb2.P4Info()
        with open(p4info_path, "r", encoding="utf-8") as f:
            text_format.Merge(f.read(), self.p4info, allow_unknown_field=True)
        self._index_p4info()

        self.channel = grpc.insecure_channel(self.grpc_addr)
        try:
            grpc.channel_ready_future(self.channel).result(timeout=10)
        except grpc.FutureTimeoutError:
            self.fail("no P4Runtime server at %s (test param grpcaddr)" % self.grpc_addr)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._groups = []
        self._stream_out = queue.Queue()
        self._stream_in = queue.Queue()
        self._stream = self.stub.StreamChannel(iter(self._stream_out.get, None))
        self._stream_thread = threading.Thread(target=self._receive, daemon=True)
        self._stream_thread.start()
        self._arbitrate()

    def tearDown(self):
        self.delete_multicast_groups()
        self._stream_out.put(None)
        self._stream_thread.join(timeout=5)
        self.channel.close()
        BaseTest.tearDown(self)

    # --- session -------------------------------------------------------------------------

    def _receive(self):
        try:
            for msg in self._stream:
                self._stream_in.put(msg)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:
                logging.warning("P4Runtime stream ended: %s", e)

    def _arbitrate(self):
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = ELECTION_ID
        self._stream_out.put(req)
        deadline = time.time() + 5
        while time.time() < deadline:
            try:
                msg = self._stream_in.get(timeout=deadline - time.time())
            except queue.Empty:
                break
            if msg.HasField("arbitration"):
                if msg.arbitration.status.code != grpc.StatusCode.OK.value[0]:
                    self.fail("not elected master on %s: %s" % (self.grpc_addr, msg.arbitration.status))
                return
        self.fail("no arbitration answer from %s" % self.grpc_addr)

    def push_pipeline(self):
        """SetForwardingPipelineConfig (VERIFY_AND_COMMIT). This also resets all switch state."""
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest()
        req.device_id = self.device_id
        req.election_id.high, req.election_id.low = ELECTION_ID
        req.action = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
        req.config.p4info.CopyFrom(self.p4info)
        if os.path.isdir(self.config_path):
            req.config.p4_device_config = pi_device_config(self.config_path)
        elif self.config_path:
            with open(self.config_path, "rb") as f:
                req.config.p4_device_config = f.read()
        self.stub.SetForwardingPipelineConfig(req)

    # --- names ---------------------------------------------------------------------------

    def _index_p4info(self):
        # Entities are found by the last component of their name (docs/protocol.md).
        self._by_name = {}
        for kind in ("tables", "actions", "counters", "registers"):
            for obj in getattr(self.p4info, kind):
                key = (kind, last_component(obj.preamble.name))
                if key in self._by_name:
                    raise ValueError("P4Info: %s %s is ambiguous" % key)
                self._by_name[key] = obj

    def has_counter(self, name):
        return ("counters", name) in self._by_name

    def _get(self, kind, name):
        try:
            return self._by_name[(kind, name)]
        except KeyError:
            raise KeyError("P4Info has no %s named %s" % (kind[:-1], name)) from None

    # --- writes --------------------------------------------------------------------------

    def write(self, *updates):
        req = p4runtime_pb2.WriteRequest()
        req.device_id = self.device_id
        req.election_id.high, req.election_id.low = ELECTION_ID
        req.updates.extend(updates)
        self.stub.Write(req)

    def _action(self, name, params):
        action = self._get("actions", name)
        a = p4runtime_pb2.Action(action_id=action.preamble.id)
        given = dict(params or {})
        for p in action.params:
            if p.name not in given:
                raise ValueError("action %s: missing parameter %s" % (name, p.name))
            a.params.add(param_id=p.id, value=encode(int(given.pop(p.name)), p.bitwidth))
        if given:
            raise ValueError("action %s: unknown parameters %s" % (name, sorted(given)))
        return a

    def table_entry(self, table, match, action, params=None):
        """match: {field name: value} for exact, {field name: (value, prefix_len)} for lpm."""
        t = self._get("tables", table)
        entry = p4runtime_pb2.TableEntry(table_id=t.preamble.id)
        for mf in t.match_fields:
            if mf.name not in match:
                continue
            value = match[mf.name]
            fm = entry.match.add(field_id=mf.id)
            if mf.match_type == p4info_pb2.MatchField.LPM:
                fm.lpm.value = encode(value[0], mf.bitwidth)
                fm.lpm.prefix_len = value[1]
            else:
                fm.exact.value = encode(value, mf.bitwidth)
        entry.action.action.CopyFrom(self._action(action, params))
        return entry

    def insert_table_entry(self, table, match, action, params=None):
        update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
        update.entity.table_entry.CopyFrom(self.table_entry(table, match, action, params))
        self.write(update)

    def delete_table_entry(self, table, match):
        """Deletes the entry of an exact-match table with this match."""
        t = self._get("tables", table)
        entry = p4runtime_pb2.TableEntry(table_id=t.preamble.id)
        for mf in t.match_fields:
            entry.match.add(field_id=mf.id).exact.value = encode(match[mf.name], mf.bitwidth)
        update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.DELETE)
        update.entity.table_entry.CopyFrom(entry)
        self.write(update)

    def set_default_action(self, table, action, params=None):
        update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
        entry = self.table_entry(table, {}, action, params)
        entry.is_default_action = True
        update.entity.table_entry.CopyFrom(entry)
        self.write(update)

    def insert_multicast_group(self, group, ports):
        update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
        mg = update.entity.packet_replication_engine_entry.multicast_group_entry
        mg.multicast_group_id = group
        for port in ports:
            mg.replicas.add(egress_port=port, instance=0)
        self.write(update)
        self._groups.append(group)

    def delete_multicast_groups(self):
        """Deletes the groups this test inserted. BMv2 keeps its replication nodes across a
        pipeline push while its P4Runtime server forgets the groups, so a group the next test
        inserts with the same id would still replicate to the old ports."""
        for group in self._groups:
            update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.DELETE)
            update.entity.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = group
            self.write(update)
        self._groups = []

    # --- counters ------------------------------------------------------------------------

    def read_counters(self, counter, indices):
        """{index: (packets, bytes)} of an indirect counter, in one Read."""
        c = self._get("counters", counter)
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        for i in indices:
            e = req.entities.add()
            e.counter_entry.counter_id = c.preamble.id
            e.counter_entry.index.index = i
        out = {}
        for resp in self.stub.Read(req):
            for e in resp.entities:
                ce = e.counter_entry
                out[ce.index.index] = (ce.data.packet_count, ce.data.byte_count)
        missing = set(indices) - set(out)
        if missing:
            self.fail("counter %s: no data for indices %s" % (counter, sorted(missing)[:8]))
        return out
