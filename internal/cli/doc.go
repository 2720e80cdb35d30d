// Package cli is what the commands share: bearer-token files, the flags of an API client, and
// serving HTTP until a signal.
package cli
