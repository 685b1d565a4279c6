package mcpclient

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/resource"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/tool"
)

// maxMedia bounds one image, audio clip or blob den saves from a
// result.
const maxMedia = 32 << 20

// result makes den's result of a server's: its text (and embedded text
// resources, resource links, and the structured content as JSON when
// no text already says it) capped and offloaded as shell output is;
// each image, audio clip and blob saved in /den/attachments, named by
// its den:// URL (which the faces show); images also given to the
// model as images when it takes them.
func (s *Set) result(ctx context.Context, env *tool.Env, srv *Server, name string, r *mcp.CallToolResult) (tool.Result, error) {
	var text strings.Builder
	var images []llm.Part
	add := func(line string) {
		if text.Len() > 0 && !strings.HasSuffix(text.String(), "\n") {
			text.WriteByte('\n')
		}
		text.WriteString(line)
	}
	var texts []string
	for i, c := range r.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			add(c.Text)
			texts = append(texts, c.Text)
		case *mcp.ImageContent:
			url, problem, err := s.save(ctx, env, srv, name, i, c.MIMEType, c.Data)
			if err != nil {
				return tool.Result{}, err
			}
			if problem != "" {
				add(fmt.Sprintf("[an image (%s, %d bytes) that den could not save: %s]", c.MIMEType, len(c.Data), problem))
			} else {
				add(fmt.Sprintf("[image %s, %d bytes: %s]", c.MIMEType, len(c.Data), url))
			}
			if env.Images {
				if img, _, problem := tool.ViewImage(c.Data); problem == "" {
					images = append(images, img)
				} else {
					add("[the model cannot see it: " + problem + "]")
				}
			}
		case *mcp.AudioContent:
			url, problem, err := s.save(ctx, env, srv, name, i, c.MIMEType, c.Data)
			if err != nil {
				return tool.Result{}, err
			}
			if problem != "" {
				add(fmt.Sprintf("[audio (%s, %d bytes) that den could not save: %s]", c.MIMEType, len(c.Data), problem))
			} else {
				add(fmt.Sprintf("[audio %s, %d bytes: %s]", c.MIMEType, len(c.Data), url))
			}
		case *mcp.ResourceLink:
			line := "[resource link: " + c.URI
			if c.Name != "" {
				line += " " + c.Name
			}
			if c.MIMEType != "" {
				line += " (" + c.MIMEType + ")"
			}
			if c.Description != "" {
				line += ": " + oneLine(c.Description)
			}
			add(line + "; read it with den-mcp read " + srv.Name + " URI]")
		case *mcp.EmbeddedResource:
			rc := c.Resource
			if rc == nil {
				continue
			}
			if rc.Blob == nil {
				add(fmt.Sprintf("[resource %s]\n%s", rc.URI, rc.Text))
				texts = append(texts, rc.Text)
				continue
			}
			url, problem, err := s.save(ctx, env, srv, name, i, rc.MIMEType, rc.Blob)
			if err != nil {
				return tool.Result{}, err
			}
			if problem != "" {
				add(fmt.Sprintf("[resource %s (%s, %d bytes) that den could not save: %s]", rc.URI, rc.MIMEType, len(rc.Blob), problem))
			} else {
				add(fmt.Sprintf("[resource %s (%s, %d bytes): %s]", rc.URI, rc.MIMEType, len(rc.Blob), url))
			}
			if env.Images && strings.HasPrefix(rc.MIMEType, "image/") {
				if img, _, problem := tool.ViewImage(rc.Blob); problem == "" {
					images = append(images, img)
				}
			}
		default:
			b, _ := json.Marshal(c)
			add(fmt.Sprintf("[content den does not know: %s]", clip(string(b), 500)))
		}
	}
	if r.StructuredContent != nil {
		if js, err := json.Marshal(r.StructuredContent); err == nil && !saidIn(js, texts) {
			var pretty bytes.Buffer
			json.Indent(&pretty, js, "", "  ")
			add("[structured content]\n" + pretty.String())
		}
	}
	capped, err := tool.Capped(ctx, env, "mcp-"+srv.Name, text.String())
	if err != nil {
		return tool.Result{}, err
	}
	out := tool.Result{IsError: r.IsError}
	if capped != "" || len(images) == 0 {
		if capped == "" {
			capped = "(no content)"
		}
		out.Content = append(out.Content, &llm.Text{Text: capped})
	}
	out.Content = append(out.Content, images...)
	return out, nil
}

// saidIn reports whether a text part already holds the structured
// content, as servers do for older clients.
func saidIn(js []byte, texts []string) bool {
	for _, t := range texts {
		var v any
		if json.Unmarshal([]byte(t), &v) != nil {
			continue
		}
		if b, err := json.Marshal(v); err == nil && bytes.Equal(b, js) {
			return true
		}
	}
	return false
}

// save writes a result's media in the session's /den/attachments and
// returns its den:// URL, or a problem.
func (s *Set) save(ctx context.Context, env *tool.Env, srv *Server, name string, i int, mimeType string, data []byte) (string, string, error) {
	if len(data) > maxMedia {
		return "", fmt.Sprintf("larger than %d MB", maxMedia>>20), nil
	}
	if env == nil || env.Computer == nil {
		return "", "no computer to save it in", nil
	}
	b := make([]byte, 3)
	rand.Read(b)
	p := fmt.Sprintf("%s/mcp-%s-%s-%s-%d-%s%s", sandbox.GuestAttachments, sanitize(srv.Name), sanitize(name),
		time.Now().UTC().Format("20060102-150405"), i, hex.EncodeToString(b), extension(mimeType))
	problem, err := tool.SaveFile(ctx, env, p, data)
	if err != nil || problem != "" {
		return "", problem, err
	}
	if u, ok := resource.FromGuest(p); ok {
		return u.String(), "", nil
	}
	return p, "", nil
}

// extension is a file name's extension for a media type.
func extension(mimeType string) string {
	switch mimeType {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "audio/wav", "audio/x-wav", "audio/wave":
		return ".wav"
	case "audio/mpeg":
		return ".mp3"
	case "audio/ogg":
		return ".ogg"
	}
	if exts, _ := mime.ExtensionsByType(mimeType); len(exts) > 0 {
		return exts[0]
	}
	return ".bin"
}
