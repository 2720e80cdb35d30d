// Package emu builds an emulated cluster from a topology.json on this machine: a network namespace
// per host (its IP stack drops what arrives, internal/ipdrop: the agents read AF_PACKET), veth
// links, a switch process per switch (the reference switch or BMv2) with the links' rates, and the
// switch controller serving its job API. Every name it creates starts with its prefix, and it
// removes only what it created. It needs root.
package emu
