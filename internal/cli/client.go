package cli

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// ReadToken reads a bearer token from path, trimmed; an empty path means the environment
// variable env.
func ReadToken(path, env string) (string, error) {
	if path == "" {
		return os.Getenv(env), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// ClientConfig says how to reach an API: its address, its bearer token (from TokenFile, else the
// environment variable TokenEnv) and, for one served over TLS, the CA that signed its certificate.
type ClientConfig struct {
	Addr, TokenFile, TokenEnv, CA string
}

// NewClient is the client cfg describes: newClient with the address and token, made to verify
// the server with CA when it is given.
func NewClient[C interface{ TrustCA(caFile string) error }](cfg ClientConfig, newClient func(base, token string) C) (C, error) {
	var zero C
	token, err := ReadToken(cfg.TokenFile, cfg.TokenEnv)
	if err != nil {
		return zero, err
	}
	c := newClient(cfg.Addr, token)
	if cfg.CA != "" {
		if err := c.TrustCA(cfg.CA); err != nil {
			return zero, err
		}
	}
	return c, nil
}

// ClientFlags are the flags of a command that calls an API: --api, --token-file and --ca.
type ClientFlags struct {
	API, TokenFile, CA *string
	env                string // token when --token-file is not given
}

// AddClientFlags declares the client flags on fs: what names the API ("controller"), addr is its
// default address and env the variable that holds the token by default.
func AddClientFlags(fs *flag.FlagSet, what, addr, env string) ClientFlags {
	return ClientFlags{
		API:       fs.String("api", addr, what+" API address (host:port or URL)"),
		TokenFile: fs.String("token-file", "", "file holding the API bearer token (default $"+env+")"),
		CA:        fs.String("ca", "", "CA certificate to verify an API served over TLS (implies https)"),
		env:       env,
	}
}

// Config is what the parsed flags say.
func (f ClientFlags) Config() ClientConfig {
	return ClientConfig{Addr: *f.API, TokenFile: *f.TokenFile, TokenEnv: f.env, CA: *f.CA}
}
