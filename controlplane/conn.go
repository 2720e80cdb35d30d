package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Conn is a primary P4Runtime session with one switch: a gRPC connection plus the StreamChannel
// that holds master arbitration. Done is closed when the stream ends (switch gone or demoted).
type Conn struct {
	Name       string
	Address    string
	DeviceID   uint64
	ElectionID *p4v1.Uint128

	cc     *grpc.ClientConn
	client p4v1.P4RuntimeClient
	cancel context.CancelFunc
	schema *Schema // set once the pipeline is known, to name tables in errors
	done   chan struct{}

	mu  sync.Mutex
	err error
}

// DialOptions are the connection parameters of Dial; TLS and the token come from the SwitchConfig.
type DialOptions struct {
	Timeout time.Duration // bound on connect + arbitration; default 5s
}

// Dial connects to the switch and becomes its primary controller, or fails within opts.Timeout with
// an error naming the address and the cause.
func Dial(ctx context.Context, sc *SwitchConfig, opts DialOptions) (*Conn, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	creds, err := transportCreds(sc.TLS)
	if err != nil {
		return nil, fmt.Errorf("switch %s (%s): %w", sc.Name, sc.Address, err)
	}
	dopts := []grpc.DialOption{grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.MaxCallSendMsgSize(256<<20))}
	if sc.TokenFile != "" {
		b, err := os.ReadFile(sc.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("switch %s: token file: %w", sc.Name, err)
		}
		dopts = append(dopts, grpc.WithPerRPCCredentials(bearer{token: strings.TrimSpace(string(b)), secure: sc.TLS != nil}))
	}
	cc, err := grpc.NewClient(sc.Address, dopts...)
	if err != nil {
		return nil, fmt.Errorf("switch %s (%s): %w", sc.Name, sc.Address, err)
	}
	election := sc.ElectionID
	if election == 0 {
		election = 1
	}
	c := &Conn{
		Name: sc.Name, Address: sc.Address, DeviceID: sc.DeviceID,
		ElectionID: &p4v1.Uint128{Low: election},
		cc:         cc, client: p4v1.NewP4RuntimeClient(cc), done: make(chan struct{}),
	}
	if err := c.arbitrate(ctx, timeout); err != nil {
		cc.Close()
		return nil, fmt.Errorf("switch %s (%s, device %d): %w", sc.Name, sc.Address, sc.DeviceID, err)
	}
	return c, nil
}

func (c *Conn) arbitrate(ctx context.Context, timeout time.Duration) error {
	dctx, dcancel := context.WithTimeout(ctx, timeout)
	defer dcancel()
	var last error
	for {
		stream, cancel, err := c.tryArbitrate(dctx)
		if err == nil {
			c.cancel = cancel
			go c.watch(stream)
			return nil
		}
		switch {
		case status.Code(err) == codes.Unavailable:
			last = err // not up yet: retry until the deadline, then report what the dialer saw
		case status.Code(err) == codes.InvalidArgument:
			// Our own previous session (a controller restart) may still hold the election id
			// until the switch notices its stream closed: retry, and report it at the deadline.
			last = fmt.Errorf("arbitration failed: %w", err)
		case dctx.Err() == nil:
			return fmt.Errorf("arbitration failed: %w", err)
		}
		if last == nil {
			last = err
		}
		select {
		case <-dctx.Done():
			if status.Code(last) == codes.InvalidArgument {
				return last
			}
			return fmt.Errorf("unreachable within %s: %w", timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tryArbitrate opens the stream and sends the arbitration update once. Only the setup is bounded
// by dctx: the stream itself lives until Close.
func (c *Conn) tryArbitrate(dctx context.Context) (p4v1.P4Runtime_StreamChannelClient, context.CancelFunc, error) {
	sctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(dctx, cancel)
	stream, err := c.client.StreamChannel(sctx)
	if err == nil {
		err = stream.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{
			Arbitration: &p4v1.MasterArbitrationUpdate{DeviceId: c.DeviceID, ElectionId: c.ElectionID}}})
	}
	var resp *p4v1.StreamMessageResponse
	if err == nil {
		resp, err = stream.Recv()
	}
	if err == nil {
		arb := resp.GetArbitration()
		switch {
		case arb == nil:
			err = fmt.Errorf("unexpected first stream message %T", resp.GetUpdate())
		case arb.GetStatus().GetCode() != int32(code.Code_OK):
			err = fmt.Errorf("not primary (another controller has a higher election id): %s", arb.GetStatus().GetMessage())
		}
	}
	if !stop() && err == nil {
		err = dctx.Err() // the deadline cancelled the stream just as it came up
	}
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return stream, cancel, nil
}

// watch drains the stream; its end means the session is gone.
func (c *Conn) watch(stream p4v1.P4Runtime_StreamChannelClient) {
	for {
		resp, err := stream.Recv()
		if err != nil {
			if err == io.EOF {
				err = errors.New("stream closed by the switch")
			}
			c.fail(err)
			return
		}
		if arb := resp.GetArbitration(); arb != nil && arb.GetStatus().GetCode() != int32(code.Code_OK) {
			c.fail(fmt.Errorf("demoted: %s", arb.GetStatus().GetMessage()))
			return
		}
	}
}

func (c *Conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		close(c.done)
	}
}

// Done is closed when the session has ended; Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the session ended, or nil while it is up.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the session.
func (c *Conn) Close() error {
	c.fail(errors.New("closed"))
	c.cancel()
	return c.cc.Close()
}

// Write sends updates in batches of at most batch updates per WriteRequest.
func (c *Conn) Write(ctx context.Context, updates []*p4v1.Update, batch int) error {
	if batch <= 0 {
		batch = DefaultBatchSize
	}
	for len(updates) > 0 {
		n := min(batch, len(updates))
		req := &p4v1.WriteRequest{DeviceId: c.DeviceID, ElectionId: c.ElectionID, Updates: updates[:n], Atomicity: p4v1.WriteRequest_CONTINUE_ON_ERROR}
		if _, err := c.client.Write(ctx, req); err != nil {
			return c.writeError(err, updates[:n])
		}
		updates = updates[n:]
	}
	return nil
}

// writeError names each failed update (P4Runtime puts per-update errors in the status details).
func (c *Conn) writeError(err error, updates []*p4v1.Update) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("switch %s (%s): write: %w", c.Name, c.Address, err)
	}
	var msgs []string
	for i, d := range st.Details() {
		pe, ok := d.(*p4v1.Error)
		if !ok || pe.GetCanonicalCode() == int32(codes.OK) || i >= len(updates) {
			continue
		}
		msgs = append(msgs, fmt.Sprintf("%s %s: %s: %s", updates[i].GetType(), c.describe(updates[i].GetEntity()), codes.Code(pe.GetCanonicalCode()), pe.GetMessage()))
		if len(msgs) == 5 {
			break
		}
	}
	if len(msgs) == 0 {
		return fmt.Errorf("switch %s (%s): write of %d updates: %w", c.Name, c.Address, len(updates), err)
	}
	return fmt.Errorf("switch %s (%s): write of %d updates failed: %v", c.Name, c.Address, len(updates), msgs)
}

// Read returns every entity matching the given (wildcard) entities.
func (c *Conn) Read(ctx context.Context, entities ...*p4v1.Entity) ([]*p4v1.Entity, error) {
	stream, err := c.client.Read(ctx, &p4v1.ReadRequest{DeviceId: c.DeviceID, Entities: entities})
	if err != nil {
		return nil, fmt.Errorf("switch %s (%s): read: %w", c.Name, c.Address, err)
	}
	var out []*p4v1.Entity
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("switch %s (%s): read: %w", c.Name, c.Address, err)
		}
		out = append(out, resp.GetEntities()...)
	}
}

// PipelineCookie returns the cookie of the switch's pipeline, and false if it has none.
func (c *Conn) PipelineCookie(ctx context.Context) (uint64, bool, error) {
	resp, err := c.client.GetForwardingPipelineConfig(ctx, &p4v1.GetForwardingPipelineConfigRequest{
		DeviceId: c.DeviceID, ResponseType: p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE})
	if status.Code(err) == codes.FailedPrecondition || status.Code(err) == codes.NotFound {
		return 0, false, nil // no pipeline yet (BMv2 answers FAILED_PRECONDITION)
	}
	if err != nil {
		return 0, false, fmt.Errorf("switch %s (%s): get pipeline: %w", c.Name, c.Address, err)
	}
	cfg := resp.GetConfig()
	if cfg.GetP4Info() == nil || len(cfg.GetP4Info().GetTables()) == 0 {
		return 0, false, nil
	}
	return cfg.GetCookie().GetCookie(), true, nil
}

// SetPipeline pushes P4Info and the target's device config, tagged with cookie.
func (c *Conn) SetPipeline(ctx context.Context, s *Schema, deviceConfig []byte, cookie uint64) error {
	// s.Info was parsed with DiscardUnknown, so the message marshalled here holds only fields this
	// p4runtime version knows, whatever p4c wrote.
	info := s.Info
	_, err := c.client.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId: c.DeviceID, ElectionId: c.ElectionID,
		Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: &p4v1.ForwardingPipelineConfig{P4Info: info, P4DeviceConfig: deviceConfig, Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: cookie}},
	})
	if err != nil {
		return fmt.Errorf("switch %s (%s): push pipeline: %w", c.Name, c.Address, err)
	}
	return nil
}

// bearer sends "authorization: Bearer <token>" on every call.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity is false without TLS so a token can be used on loopback.
func (b bearer) RequireTransportSecurity() bool { return b.secure }

func transportCreds(t *TLSConfig) (credentials.TransportCredentials, error) {
	if t == nil {
		return insecure.NewCredentials(), nil
	}
	cfg, err := t.clientConfig()
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(cfg), nil
}

// clientConfig builds a TLS client configuration (CA to verify the peer, optional client cert).
func (t *TLSConfig) clientConfig() (*tls.Config, error) {
	cfg := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, fmt.Errorf("tls ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls ca %s: no certificate found", t.CA)
		}
		cfg.RootCAs = pool
	}
	if t.Cert != "" {
		cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("tls cert: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
