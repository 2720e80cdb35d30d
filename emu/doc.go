// Package emu builds an emulated cluster from a topology.json on this machine: a network namespace
// per host (its eth0 drops what arrives once the agents' AF_PACKET rings have it, internal/ipdrop),
// veth links, a switch process per switch (the reference switch or BMv2) with the links' rates, and
// the switch controller serving its job API. Every name it creates starts with its prefix, and it
// removes only what it created. It needs root.
package emu
