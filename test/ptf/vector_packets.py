# SPDX-License-Identifier: Apache-2.0
"""Builds frames from the packet form of test/vectors/README.md with scapy."""

import ipaddress

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ina_scapy import INA, INA_UDP_PORT, NUM_VALUES, flags_value, type_value

ETH_DEFAULTS = {"dst": "00:00:00:00:00:fe", "src": "00:00:00:00:00:01", "type": 0x0800}
IPV4_DEFAULTS = {"src": "10.0.0.1", "dst": "10.0.0.100", "ttl": 64, "tos": 0, "id": 1,
                 "protocol": 17}


def _layer(spec, key, defaults):
    """The vector's fields for a layer over its defaults; None when the layer is left out."""
    if key in spec and spec[key] is None:
        return None
    out = dict(defaults)
    out.update(spec.get(key) or {})
    return out


def _ina(fields):
    values = fields.get("values")
    if values is None:
        values = [fields.get("values_fill", 0)] * NUM_VALUES
    values = list(values) + [0] * (NUM_VALUES - len(values))
    if len(values) != NUM_VALUES:
        raise ValueError("more than %d values" % NUM_VALUES)
    return INA(version=fields.get("version", 1), type=type_value(fields.get("type")),
               priority=fields.get("priority", 0), member=fields.get("member", 0),
               flags=flags_value(fields.get("flags")),
               job=fields.get("job", 1), slot=fields.get("slot", 0), seq=fields.get("seq", 0),
               bitmap=fields.get("bitmap", 0), values=values)


def build(spec):
    """Returns the frame bytes a vector packet describes."""
    eth = _layer(spec, "eth", ETH_DEFAULTS)
    pkt = Ether(dst=eth["dst"], src=eth["src"], type=eth["type"])
    ip = _layer(spec, "ipv4", IPV4_DEFAULTS)
    if ip is not None:
        ipv4 = IP(version=ip.get("version", 4), ihl=ip.get("ihl", 5), tos=ip["tos"], id=ip["id"],
                  flags=ip.get("flags", 0), frag=ip.get("frag_offset", 0), ttl=ip["ttl"],
                  proto=ip["protocol"],
                  src=str(ipaddress.IPv4Address(ip["src"])), dst=str(ipaddress.IPv4Address(ip["dst"])))
        if "total_length" in ip:
            ipv4.len = ip["total_length"]
        if "checksum" in ip:
            ipv4.chksum = ip["checksum"]
        pkt = pkt / ipv4
        udp = _layer(spec, "udp", {"sport": INA_UDP_PORT, "dport": INA_UDP_PORT})
        if udp is not None:
            u = UDP(sport=udp["sport"], dport=udp["dport"], chksum=udp.get("checksum", 0))
            if "length" in udp:
                u.len = udp["length"]
            pkt = pkt / u
            if "payload_hex" in spec:
                pkt = pkt / Raw(bytes.fromhex(spec["payload_hex"]))
            elif not ("ina" in spec and spec["ina"] is None):
                fields = dict(spec.get("ina") or {})
                if "values_fill" in spec:
                    fields.setdefault("values_fill", spec["values_fill"])
                pkt = pkt / _ina(fields)
        elif "payload_hex" in spec:
            pkt = pkt / Raw(bytes.fromhex(spec["payload_hex"]))
    elif "payload_hex" in spec:
        pkt = pkt / Raw(bytes.fromhex(spec["payload_hex"]))
    frame = bytes(pkt)
    if spec.get("vlan") is not None:
        vlan = spec["vlan"]
        tci = (vlan.get("pcp", 0) << 13) | vlan.get("vid", 0)
        tag = vlan.get("tpid", 0x8100).to_bytes(2, "big") + tci.to_bytes(2, "big")
        frame = frame[:12] + tag + frame[12:]
    if "truncate" in spec:
        frame = frame[:spec["truncate"]]
    if "append_hex" in spec:
        frame += bytes.fromhex(spec["append_hex"])
    return frame
