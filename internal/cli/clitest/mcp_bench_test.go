package clitest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/mcpclient"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/store"
	"den.dev/den/internal/tool"
)

// BenchmarkMCPEverythingCall measures a call of server-everything's
// echo, warm, over stdio inside a Debian computer with Node.js: den's
// whole path (registry, gate with its audit row, server, result) and,
// on the same connection, the SDK's call alone (the transport and
// Node's own time). p50-ms is each one's median.
func BenchmarkMCPEverythingCall(b *testing.B) {
	layer := nodeLayer(b)
	data := b.TempDir()
	bw, err := bwrap.New("")
	if err != nil {
		b.Fatal(err)
	}
	m, err := computer.New(data, bw)
	if err != nil {
		b.Fatal(err)
	}
	comp, err := m.Computer("node")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := comp.Import(ctx, layer); err != nil {
		b.Fatal(err)
	}
	sess, err := comp.Start(ctx, "s1", computer.SessionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	st, err := store.Open(filepath.Join(data, "den.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	set := mcpclient.NewSet(mcpclient.Options{Agent: "node", Session: "s1", DataDir: data,
		Gate:    permission.New(st, "node", permission.Policy{}, permission.Options{}),
		Servers: []*mcpclient.Server{{Name: "everything", Type: mcpclient.Stdio, Command: "mcp-server-everything", Enabled: true}},
		Computer: func(ctx context.Context, _ *mcpclient.Server, cmd *sandbox.Cmd) (sandbox.Process, func(), error) {
			c := *cmd
			c.Env = append(computer.BaseEnv("s1"), cmd.Env...)
			return comp.StartRaw(ctx, "s1", computer.SessionOptions{}, &c)
		}})
	defer set.Close()
	reg, err := tool.NewRegistry(set.Offer(ctx, 200000).Tools...)
	if err != nil {
		b.Fatal(err)
	}
	env := &tool.Env{Computer: sess, Session: "s1"}
	call := llm.ToolCall{ID: "c1", Name: "mcp__everything__echo", Input: json.RawMessage(`{"message": "ping"}`)}
	if r, err := reg.Call(ctx, env, call, false); err != nil || r.IsError {
		b.Fatalf("warm-up: %+v %v", r, err)
	}
	median := func(b *testing.B, f func()) {
		var times []time.Duration
		for b.Loop() {
			start := time.Now()
			f()
			times = append(times, time.Since(start))
		}
		slices.Sort(times)
		b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	}
	b.Run("den", func(b *testing.B) {
		median(b, func() {
			if r, err := reg.Call(ctx, env, call, false); err != nil || r.IsError {
				b.Fatalf("%+v %v", r, err)
			}
		})
	})
	b.Run("protocol", func(b *testing.B) {
		// The same server, started beside den's, spoken to by the SDK
		// alone.
		inR, inW, _ := os.Pipe()
		outR, outW, _ := os.Pipe()
		proc, cleanup, err := comp.StartRaw(ctx, "s1", computer.SessionOptions{}, &sandbox.Cmd{
			Args: []string{"mcp-server-everything"}, Env: computer.BaseEnv("s1"), Dir: "/workspace", Stdin: inR, Stdout: outW})
		inR.Close()
		outW.Close()
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			inW.Close()
			proc.Kill()
			cleanup()
			outR.Close()
		}()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		median(b, func() {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "ping"}}); err != nil {
				b.Fatal(err)
			}
		})
	})
}
