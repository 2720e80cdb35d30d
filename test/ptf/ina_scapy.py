# SPDX-License-Identifier: Apache-2.0
"""Scapy layer for the INA header (docs/protocol.md, "INA header").

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-------+-------+---------------+-------------------------------+
    |Version| Type  |   Priority    |             Flags             |
    +-------+-------+---------------+-------------------------------+
    |            Job ID             |          Slot index           |
    +-------------------------------+-------------------------------+
    |                        Sequence number                        |
    +---------------------------------------------------------------+
    |                         Worker bitmap                         |
    +---------------------------------------------------------------+
    |                     K signed 32-bit values                    |

Written from the document, independently of the Go codec (p4src/wire), so that the two check
each other through the conformance vectors.
"""

from scapy.fields import (BitEnumField, BitField, ByteField, FieldListField, FlagsField,
                          IntField, ShortField, SignedIntField)
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

INA_VERSION = 1
INA_UDP_PORT = 47000
NUM_VALUES = 64
HEADER_LEN = 16

TYPE_DATA = 1
TYPE_RESULT = 2
TYPES = {TYPE_DATA: "data", TYPE_RESULT: "result"}

# Flag names in bit order (bit 0 = 0x0001), as vectors spell them.
FLAG_NAMES = ["resend", "collision", "preempted", "flushed", "bypass", "overflow", "ecn",
              "stale", "float", "corrupt", "unicast"]
# The flags are the low 12 bits of their 16-bit word; the top 4 are the member index.
FLAGS_BITS = 12
MAX_MEMBERS = 16
FLAGS = {name: 1 << i for i, name in enumerate(FLAG_NAMES)}


def flags_value(flags):
    """Flags given as a number or a list of names -> the 16-bit field value."""
    if flags is None:
        return 0
    if isinstance(flags, int):
        if flags >> FLAGS_BITS:
            raise ValueError("INA flags %#x above 12 bits: the top 4 bits are the member field" % flags)
        return flags
    value = 0
    for name in flags:
        if name not in FLAGS:
            raise ValueError("unknown INA flag %r" % name)
        value |= FLAGS[name]
    return value


def type_value(typ):
    """Type given as "data", "result" or a number -> the 4-bit field value."""
    if typ is None:
        return TYPE_DATA
    if isinstance(typ, int):
        return typ
    for code, name in TYPES.items():
        if name == typ:
            return code
    raise ValueError("unknown INA type %r" % typ)


class INA(Packet):
    """The INA header with its K values."""

    name = "INA"
    fields_desc = [
        BitField("version", INA_VERSION, 4),
        BitEnumField("type", TYPE_DATA, 4, TYPES),
        ByteField("priority", 0),
        BitField("member", 0, 4),
        FlagsField("flags", 0, FLAGS_BITS, FLAG_NAMES),
        ShortField("job", 1),
        ShortField("slot", 0),
        IntField("seq", 0),
        IntField("bitmap", 0),
        FieldListField("values", [0] * NUM_VALUES, SignedIntField("value", 0),
                       count_from=lambda pkt: NUM_VALUES),
    ]

    def post_build(self, pkt, pay):
        if len(self.values) != NUM_VALUES:
            raise ValueError("INA carries exactly %d values, got %d" % (NUM_VALUES, len(self.values)))
        return pkt + pay

    def mysummary(self):
        return self.sprintf("INA %type% member=%member% job=%job% slot=%slot% seq=%seq% bitmap=%bitmap% flags=%flags%")


bind_layers(UDP, INA, dport=INA_UDP_PORT)
