// Package afring is AF_PACKET I/O through PACKET_MMAP rings: a TPACKET_V2 receive ring and a
// transmit ring on one socket, so frames cross the kernel boundary in batches and without a copy
// or an allocation per frame.
package afring
