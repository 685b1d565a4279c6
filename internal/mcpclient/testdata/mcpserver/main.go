// Command mcpserver is the MCP server of mcpclient's tests: a small
// server with the kinds of tools, results and failures den must handle,
// built static so that it also runs in a busybox computer.
//
//	mcpserver [stdio]     the server on stdin and stdout
//	mcpserver http ADDR   streamable HTTP on ADDR (prints its URL)
//	mcpserver sse ADDR    HTTP with server-sent events on ADDR
//	mcpserver garbage     prints what is not MCP, and never answers
//	mcpserver hang        reads, and never answers
//	mcpserver die         says why on stderr and exits 2
package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	mode := "stdio"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	switch mode {
	case "stdio":
		fmt.Fprintln(os.Stderr, "mcpserver: ready on stdio")
		if err := server().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "mcpserver:", err)
			os.Exit(1)
		}
	case "http", "sse":
		ln, err := net.Listen("tcp", os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		var h http.Handler
		if mode == "http" {
			h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server() }, nil)
		} else {
			h = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server() }, nil)
		}
		fmt.Printf("http://%s/\n", ln.Addr())
		http.Serve(ln, h)
	case "garbage":
		fmt.Println("Starting the server, please wait...")
		fmt.Println("<html>not a protocol</html>")
		time.Sleep(time.Hour)
	case "hang":
		buf := make([]byte, 4096)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				time.Sleep(time.Hour)
			}
		}
	case "die":
		fmt.Fprintln(os.Stderr, "mcpserver: cannot open the database: permission denied")
		os.Exit(2)
	}
}

func server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "den-test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Say text back.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Text string `json:"text" jsonschema:"what to say back"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	type sum struct {
		Sum float64 `json:"sum"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			A float64 `json:"a"`
			B float64 `json:"b"`
		}) (*mcp.CallToolResult, sum, error) {
			return nil, sum{in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "A small red image.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			img := image.NewRGBA(image.Rect(0, 0, 4, 4))
			for i := range img.Pix {
				img.Pix[i] = []byte{255, 0, 0, 255}[i%4]
			}
			img.Set(0, 0, color.White)
			var b bytes.Buffer
			png.Encode(&b, img)
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "here is the image"},
				&mcp.ImageContent{MIMEType: "image/png", Data: b.Bytes()},
				&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF\x24\x00\x00\x00WAVEfmt ")},
			}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "A long text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			N int `json:"n"`
		}) (*mcp.CallToolResult, any, error) {
			var b strings.Builder
			for i := 0; b.Len() < in.N; i++ {
				fmt.Fprintf(&b, "line %d\n", i)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Wait."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Seconds float64 `json:"seconds"`
		}) (*mcp.CallToolResult, any, error) {
			time.Sleep(time.Duration(in.Seconds * float64(time.Second)))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "The server dies."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "mcpserver: crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "garble", Description: "The server writes broken JSON."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			os.Stdout.WriteString("{this is not json\n")
			time.Sleep(time.Hour)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "A tool that fails."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("the disk is full")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Show the environment.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			wd, _ := os.Getwd()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n") + "\nCWD=" + wd}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "write_note", Description: "Write a note (changes things)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "noted: " + in.Text}}}, nil, nil
		})
	if os.Getenv("DEN_TEST_MCP_FETCH") == "1" {
		// Only where a test asks for it: the others count the tools.
		mcp.AddTool(s, &mcp.Tool{Name: "fetch", Description: "GET a URL; say the status and the body."},
			func(ctx context.Context, req *mcp.CallToolRequest, in struct {
				URL string `json:"url"`
			}) (*mcp.CallToolResult, any, error) {
				// One connection per fetch, ended with it: den records a
				// connection when it ends.
				c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
				resp, err := c.Get(in.URL)
				if err != nil {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fetch failed: " + err.Error()}}}, nil, nil
				}
				defer resp.Body.Close()
				var body bytes.Buffer
				body.ReadFrom(http.MaxBytesReader(nil, resp.Body, 4096))
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("fetch %d: %s", resp.StatusCode, body.String())}}}, nil, nil
			})
	}
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greet someone.", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Please greet " + req.Params.Arguments["name"] + " warmly."}}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "test://hello", Name: "hello", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://hello", MIMEType: "text/plain", Text: "hello world"}}}, nil
		})
	return s
}
