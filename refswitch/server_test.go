package refswitch

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/antoninbas/p4runtime-go-client/pkg/client"
	p4config "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/sirupsen/logrus"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/inapack/inapack/p4src/model"
)

const (
	tIPv4   = "Ingress.fwd.ipv4_lpm"
	tJob    = "Ingress.job.ina_job"
	tPS     = "Ingress.job.ina_ps"
	tSet    = "Ingress.job.ina_settings"
	aFwd    = "Ingress.fwd.ipv4_forward"
	aWorker = "Ingress.job.ina_worker"
	aResult = "Ingress.job.ina_result"
	aSetPS  = "Ingress.job.ina_set_ps"
	aSet    = "Ingress.job.ina_set_settings"
	tUni    = "Ingress.unicast.ina_unicast"
	aUni    = "Ingress.unicast.ina_unicast_port"
)

// The go-client logs through logrus; its complaints when a test closes a stream are noise here.
func init() { logrus.SetOutput(io.Discard) }

func testP4Info(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/ina.p4info.txtpb")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startServer serves a fresh model over an in-memory gRPC connection.
func startServer(t testing.TB) (*model.Switch, p4v1.P4RuntimeClient) {
	t.Helper()
	sw := model.New()
	lis := bufconn.Listen(1 << 20)
	g := grpc.NewServer()
	NewP4RuntimeServer(sw, WithLogger(slog.New(slog.DiscardHandler))).Register(g)
	go func() { _ = g.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); g.Stop() })
	return sw, p4v1.NewP4RuntimeClient(conn)
}

// primary starts a go-client with the given election id and waits for its arbitration outcome.
func primary(t testing.TB, c p4v1.P4RuntimeClient, election uint64) (*client.Client, bool) {
	t.Helper()
	cl := client.NewClient(c, 1, &p4v1.Uint128{Low: election})
	stop := make(chan struct{})
	arb := make(chan bool, 8)
	go func() { _ = cl.Run(stop, arb, make(chan *p4v1.StreamMessageResponse, 8)) }()
	t.Cleanup(func() { close(stop) })
	select {
	case ok := <-arb:
		return cl, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no arbitration response")
	}
	return nil, false
}

// pushed returns a primary go-client on a server with the test pipeline committed.
func pushed(t testing.TB) (*model.Switch, p4v1.P4RuntimeClient, *client.Client) {
	t.Helper()
	sw, c := startServer(t)
	cl, ok := primary(t, c, 1)
	if !ok {
		t.Fatal("not primary")
	}
	if _, err := cl.SetFwdPipeFromBytes(context.Background(), []byte(`{"bmv2":"json"}`), testP4Info(t), 7); err != nil {
		t.Fatalf("pipeline push: %v", err)
	}
	return sw, c, cl
}

func u32(v uint32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }
func u16(v uint16) []byte { return []byte{byte(v >> 8), byte(v)} }

func updateCode(t *testing.T, err error) codes.Code {
	t.Helper()
	if err == nil {
		t.Fatal("write succeeded, want an error")
	}
	errs := UpdateErrors(err)
	if len(errs) != 1 {
		t.Fatalf("want one per-update error in the details, got %v (%v)", errs, err)
	}
	return codes.Code(errs[0].CanonicalCode)
}

func TestPipelinePushAndGet(t *testing.T) {
	sw, _, cl := pushed(t)
	sw.SetSettings(model.Settings{ActiveSlots: 3})
	got, err := cl.GetFwdPipe(context.Background(), client.GetFwdPipeAll)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.P4DeviceConfig) != `{"bmv2":"json"}` || len(got.P4Info.GetTables()) != 5 {
		t.Fatalf("GetFwdPipe: device config %q, %d tables", got.P4DeviceConfig, len(got.P4Info.GetTables()))
	}
	// A second push resets the model.
	if _, err := cl.SetFwdPipeFromBytes(context.Background(), nil, testP4Info(t), 8); err != nil {
		t.Fatal(err)
	}
	if sw.Settings() != model.DefaultSettings() {
		t.Fatalf("settings after re-push: %+v", sw.Settings())
	}
}

func TestPipelineMismatchNamesEntity(t *testing.T) {
	_, c := startServer(t)
	cl, _ := primary(t, c, 1)
	cases := []struct {
		edit func(*p4config.P4Info)
		want []string
	}{
		{func(i *p4config.P4Info) { findTable(i, "ina_job").MatchFields[1].Bitwidth = 8 }, []string{"ina_job", "ingress_port", "8"}},
		{func(i *p4config.P4Info) { findAction(i, "ina_set_ps").Params[0].Bitwidth = 16 }, []string{"ina_set_ps", "port"}},
		{func(i *p4config.P4Info) { findAction(i, "ina_worker").Params[1].Name = "fanin" }, []string{"ina_worker", "fan_in"}},
		{func(i *p4config.P4Info) { i.Tables = i.Tables[:2] }, []string{"ina_ps"}},
		{func(i *p4config.P4Info) { i.Counters[1].Size = 10 }, []string{"ina_job_events", "size"}},
		{func(i *p4config.P4Info) { i.Registers = i.Registers[:10] }, []string{"slot_value_4"}},
		{func(i *p4config.P4Info) {
			i.Registers[6].TypeSpec.GetBitstring().TypeSpec = &p4config.P4BitstringLikeTypeSpec_Int{Int: &p4config.P4IntTypeSpec{Bitwidth: 32}}
		}, []string{"slot_value_0", "bit<32>"}},
	}
	for _, tc := range cases {
		info := &p4config.P4Info{}
		if err := prototext.Unmarshal(testP4Info(t), info); err != nil {
			t.Fatal(err)
		}
		tc.edit(info)
		b, _ := prototext.Marshal(info)
		for _, act := range []p4v1.SetForwardingPipelineConfigRequest_Action{p4v1.SetForwardingPipelineConfigRequest_VERIFY, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT} {
			_, err := cl.SetFwdPipeFromBytesWithAction(context.Background(), nil, b, 0, act)
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("%v: want InvalidArgument, got %v", tc.want, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(status.Convert(err).Message(), w) {
					t.Errorf("error %q does not name %q", status.Convert(err).Message(), w)
				}
			}
		}
	}
	// Nothing was committed.
	if _, err := c.Write(context.Background(), &p4v1.WriteRequest{DeviceId: 1, ElectionId: &p4v1.Uint128{Low: 1}}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("write without a pipeline: %v", err)
	}
}

func findTable(i *p4config.P4Info, name string) *p4config.Table {
	for _, t := range i.Tables {
		if lastName(t.Preamble.Name) == name {
			return t
		}
	}
	return nil
}

func findAction(i *p4config.P4Info, name string) *p4config.Action {
	for _, a := range i.Actions {
		if lastName(a.Preamble.Name) == name {
			return a
		}
	}
	return nil
}

func TestSaveThenCommit(t *testing.T) {
	sw, c := startServer(t)
	cl, _ := primary(t, c, 1)
	ctx := context.Background()
	if _, err := cl.CommitFwdPipe(ctx); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("commit without save: %v", err)
	}
	if _, err := cl.SaveFwdPipeFromBytes(ctx, nil, testP4Info(t), 1); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := cl.GetFwdPipe(ctx, client.GetFwdPipeAll); cfg != nil {
		t.Fatal("saved config is already in force")
	}
	if _, err := cl.CommitFwdPipe(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.InsertTableEntry(ctx, cl.NewTableEntry(tPS, map[string]client.MatchInterface{"hdr.ina.job_id": &client.ExactMatch{Value: u16(3)}},
		cl.NewTableActionDirect(aSetPS, [][]byte{u16(2), {2, 0, 0, 0, 0, 9}, {10, 0, 0, 9}}), nil)); err != nil {
		t.Fatal(err)
	}
	// RECONCILE_AND_COMMIT keeps the state.
	if _, err := cl.SetFwdPipeFromBytesWithAction(ctx, nil, testP4Info(t), 2, p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT); err != nil {
		t.Fatal(err)
	}
	if _, ok := sw.PS(3); !ok {
		t.Fatal("RECONCILE_AND_COMMIT lost the ina_ps entry")
	}
}

// ina_unicast entries are written into the model, read back, refused with two bits, and deleted.
func TestUnicastWriteRead(t *testing.T) {
	sw, _, cl := pushed(t)
	ctx := context.Background()
	key := func(job uint16, bitmap uint32) map[string]client.MatchInterface {
		return map[string]client.MatchInterface{
			"hdr.ina.job_id": &client.ExactMatch{Value: u16(job)},
			"hdr.ina.bitmap": &client.ExactMatch{Value: u32(bitmap)},
		}
	}
	if err := cl.InsertTableEntry(ctx, cl.NewTableEntry(tUni, key(5, 4), cl.NewTableActionDirect(aUni, [][]byte{u16(3)}), nil)); err != nil {
		t.Fatal(err)
	}
	if p, ok := sw.Unicast(model.UnicastKey{Job: 5, Bitmap: 4}); !ok || p != 3 {
		t.Fatalf("model entry: port %d %v, want 3", p, ok)
	}
	if got := updateCode(t, cl.InsertTableEntry(ctx, cl.NewTableEntry(tUni, key(5, 4), cl.NewTableActionDirect(aUni, [][]byte{u16(3)}), nil))); got != codes.AlreadyExists {
		t.Fatalf("duplicate insert: %v", got)
	}
	if got := updateCode(t, cl.InsertTableEntry(ctx, cl.NewTableEntry(tUni, key(5, 6), cl.NewTableActionDirect(aUni, [][]byte{u16(3)}), nil))); got != codes.InvalidArgument {
		t.Fatalf("a bitmap of two bits: %v, want InvalidArgument", got)
	}
	entries, err := cl.ReadTableEntryWildcard(ctx, tUni)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || string(entries[0].GetAction().GetAction().GetParams()[0].Value) != "\x03" {
		t.Fatalf("read back %v", entries)
	}
	if err := cl.DeleteTableEntry(ctx, cl.NewTableEntry(tUni, key(5, 4), nil, nil)); err != nil {
		t.Fatal(err)
	}
	if _, ok := sw.Unicast(model.UnicastKey{Job: 5, Bitmap: 4}); ok {
		t.Fatal("the deleted entry is still in the model")
	}
}

func TestTableWriteRead(t *testing.T) {
	sw, _, cl := pushed(t)
	ctx := context.Background()
	key := func(job, port uint16) map[string]client.MatchInterface {
		return map[string]client.MatchInterface{
			"hdr.ina.job_id":                 &client.ExactMatch{Value: u16(job)},
			"standard_metadata.ingress_port": &client.ExactMatch{Value: u16(port)},
			"member":                         &client.ExactMatch{Value: []byte{0}},
		}
	}
	worker := cl.NewTableActionDirect(aWorker, [][]byte{u32(4), {3}, {7}, {1}})
	if err := cl.InsertTableEntry(ctx, cl.NewTableEntry(tJob, key(5, 2), worker, nil)); err != nil {
		t.Fatal(err)
	}
	if got := updateCode(t, cl.InsertTableEntry(ctx, cl.NewTableEntry(tJob, key(5, 2), worker, nil))); got != codes.AlreadyExists {
		t.Fatalf("duplicate insert: %v", got)
	}
	want := model.JobEntry{Role: model.RoleWorker, WorkerBit: 4, FanIn: 3, PriorityCap: 7, INAEnabled: true}
	if e, ok := sw.Job(model.JobKey{Job: 5, Port: 2}); !ok || e != want {
		t.Fatalf("model entry %+v %v", e, ok)
	}
	// Non-canonical (leading zero) bytes are accepted.
	res := cl.NewTableActionDirect(aResult, [][]byte{{0, 0, 9}})
	if err := cl.InsertTableEntry(ctx, &p4v1.TableEntry{TableId: 33600001, Action: res, Match: []*p4v1.FieldMatch{
		{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{0, 0, 5}}}},
		{FieldId: 2, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{0, 1}}}},
		{FieldId: 3, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: []byte{0, 3}}}},
	}}); err != nil {
		t.Fatal(err)
	}
	if e, ok := sw.Job(model.JobKey{Job: 5, Port: 1, Member: 3}); !ok || e.Role != model.RoleResult || e.McastGroup != 9 {
		t.Fatalf("member 3's entry %+v %v", e, ok)
	}
	if err := cl.ModifyTableEntry(ctx, cl.NewTableEntry(tJob, key(5, 2), cl.NewTableActionDirect(aWorker, [][]byte{u32(8), {3}, {7}, {0}}), nil)); err != nil {
		t.Fatal(err)
	}
	entries, err := cl.ReadTableEntryWildcard(ctx, tJob)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("read %d ina_job entries", len(entries))
	}
	// Entries come back sorted by key, canonical.
	if p := entries[1].GetAction().GetAction().GetParams(); string(p[0].Value) != "\x08" || string(p[3].Value) != "\x00" {
		t.Fatalf("modified entry read back as %v", entries[1])
	}
	if string(entries[0].Match[0].GetExact().Value) != "\x05" {
		t.Fatalf("non-canonical key read back as %v", entries[0].Match[0])
	}
	// Bad values: worker bit with two bits, width overflow, bad table.
	if got := updateCode(t, cl.InsertTableEntry(ctx, cl.NewTableEntry(tJob, key(6, 2), cl.NewTableActionDirect(aWorker, [][]byte{u32(3), {3}, {7}, {1}}), nil))); got != codes.InvalidArgument {
		t.Fatalf("two-bit worker_bit: %v", got)
	}
	if got := updateCode(t, cl.InsertTableEntry(ctx, cl.NewTableEntry(tJob, key(6, 512), worker, nil))); got != codes.InvalidArgument {
		t.Fatalf("port 512: %v", got)
	}
	if err := cl.DeleteTableEntry(ctx, cl.NewTableEntry(tJob, key(5, 2), nil, nil)); err != nil {
		t.Fatal(err)
	}
	if got := updateCode(t, cl.DeleteTableEntry(ctx, cl.NewTableEntry(tJob, key(5, 2), nil, nil))); got != codes.NotFound {
		t.Fatalf("second delete: %v", got)
	}
	if got := updateCode(t, cl.ModifyTableEntry(ctx, cl.NewTableEntry(tJob, key(5, 2), worker, nil))); got != codes.NotFound {
		t.Fatalf("modify of a missing entry: %v", got)
	}

	// ipv4_lpm
	lpm := func(a []byte, l int32) map[string]client.MatchInterface {
		return map[string]client.MatchInterface{"hdr.ipv4.dst_addr": &client.LpmMatch{Value: a, PLen: l}}
	}
	fwd := cl.NewTableActionDirect(aFwd, [][]byte{{2, 0, 0, 0, 0, 1}, u16(3)})
	if err := cl.InsertTableEntry(ctx, cl.NewTableEntry(tIPv4, lpm([]byte{10, 0, 1, 0}, 24), fwd, nil)); err != nil {
		t.Fatal(err)
	}
	bad := &p4v1.TableEntry{TableId: 33574068, Action: fwd, Match: []*p4v1.FieldMatch{{FieldId: 1,
		FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: []byte{10, 0, 1, 1}, PrefixLen: 24}}}}}
	if got := updateCode(t, cl.InsertTableEntry(ctx, bad)); got != codes.InvalidArgument {
		t.Fatalf("lpm with host bits: %v", got)
	}
	if rs := sw.Routes(); len(rs) != 1 || rs[0].Prefix.String() != "10.0.1.0/24" || rs[0].Port != 3 {
		t.Fatalf("routes %+v", rs)
	}
	got, err := cl.ReadTableEntry(ctx, tIPv4, []client.MatchInterface{&client.LpmMatch{Value: []byte{10, 0, 1, 0}, PLen: 24}})
	if err != nil || got.Match[0].GetLpm().PrefixLen != 24 {
		t.Fatalf("read lpm entry: %v %v", got, err)
	}

	// ina_settings: default entry
	set := cl.NewTableEntry(tSet, nil, cl.NewTableActionDirect(aSet, [][]byte{{0}, {1}, u16(100), u16(512)}), nil)
	if err := cl.ModifyTableEntry(ctx, set); err != nil {
		t.Fatal(err)
	}
	if s := sw.Settings(); s.Preempt || !s.ReleaseOnResult || s.ECNThreshold != 100 || s.ActiveSlots != 512 {
		t.Fatalf("settings %+v", s)
	}
	// active_slots above NUM_SLOTS fits the field: accepted as written (it acts as NUM_SLOTS).
	many := cl.NewTableEntry(tSet, nil, cl.NewTableActionDirect(aSet, [][]byte{{0}, {1}, u16(100), u16(2000)}), nil)
	if err := cl.ModifyTableEntry(ctx, many); err != nil {
		t.Fatalf("active_slots 2000: %v", err)
	}
	def, err := cl.ReadEntitySingle(ctx, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: 33600003, IsDefaultAction: true}}})
	if err != nil || string(def.GetTableEntry().GetAction().GetAction().GetParams()[3].Value) != "\x07\xd0" {
		t.Fatalf("read settings default: %v %v", def, err)
	}
}

func TestBatchErrorsPerUpdate(t *testing.T) {
	_, c, cl := pushed(t)
	ps := func(job uint16) *p4v1.Update {
		return &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: cl.NewTableEntry(tPS,
			map[string]client.MatchInterface{"hdr.ina.job_id": &client.ExactMatch{Value: u16(job)}},
			cl.NewTableActionDirect(aSetPS, [][]byte{u16(1), {2, 0, 0, 0, 0, 9}, {10, 0, 0, 9}}), nil)}}}
	}
	_, err := c.Write(context.Background(), &p4v1.WriteRequest{DeviceId: 1, ElectionId: &p4v1.Uint128{Low: 1},
		Updates: []*p4v1.Update{ps(1), ps(1), ps(0), ps(2)}})
	if status.Code(err) != codes.Unknown {
		t.Fatalf("batch: %v", err)
	}
	var got []code.Code
	for _, e := range UpdateErrors(err) {
		got = append(got, code.Code(e.CanonicalCode))
	}
	want := []code.Code{code.Code_OK, code.Code_ALREADY_EXISTS, code.Code_INVALID_ARGUMENT, code.Code_OK}
	if len(got) != len(want) {
		t.Fatalf("per-update codes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("per-update codes %v, want %v", got, want)
		}
	}
}

func mustInfo(t testing.TB) *p4config.P4Info {
	t.Helper()
	info := &p4config.P4Info{}
	if err := prototext.Unmarshal(testP4Info(t), info); err != nil {
		t.Fatal(err)
	}
	return info
}
