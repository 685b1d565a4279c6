package tool

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"

	"den.dev/den/internal/llm"
)

// Limits of read_image.
const (
	// ImageMaxEdge is the longest side of an image the model gets.
	ImageMaxEdge = 2000
	// ImageMaxBytes is the largest encoded image the model gets.
	ImageMaxBytes = 5 << 20
	// imageMaxPixels refuses to decode larger images (a decompression
	// bomb would otherwise take den's memory).
	imageMaxPixels = 100_000_000
)

// ReadImage is the read_image tool: look at an image file.
type ReadImage struct{}

// Spec implements Tool.
func (ReadImage) Spec() llm.Tool {
	return llm.Tool{
		Name: "read_image",
		Description: fmt.Sprintf("Look at an image file in your computer (PNG, JPEG, GIF or WebP). "+
			"Images larger than %d px on their longest side are scaled down. Relative paths start at /workspace.", ImageMaxEdge),
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The image file."}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
	}
}

// ReadOnly implements Tool.
func (ReadImage) ReadOnly(json.RawMessage) bool { return true }

// Run implements Tool.
func (ReadImage) Run(ctx context.Context, env *Env, input json.RawMessage) (Result, error) {
	var in struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return Errorf("invalid input: %v", err), nil
	}
	if !env.Images {
		return Errorf("The current model cannot see images, so read_image is not available. Describe the file with shell_execute instead (e.g. file, identify)."), nil
	}
	if strings.TrimSpace(in.Path) == "" {
		return Errorf("path is empty"), nil
	}
	p := ResolvePath(in.Path)
	data, problem, err := readFile(ctx, env, p, maxFileBytes)
	if err != nil {
		return Result{}, err
	}
	if problem != "" {
		return Errorf("%s", problem), nil
	}
	img, info, problem := prepareImage(data)
	if problem != "" {
		return Errorf("%s: %s", p, problem), nil
	}
	return located(Result{Content: []llm.Part{
		&llm.Text{Text: fmt.Sprintf("[%s | %d bytes | %s]", p, len(data), info)},
		img,
	}}, p), nil
}

// imageKind tells an image's media type from its first bytes, or "".
func imageKind(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// prepareImage returns the image the model gets, scaled down when it is
// too large, with a description of what was done, or a problem.
func prepareImage(data []byte) (*llm.Image, string, string) {
	kind := imageKind(data)
	name := strings.ToUpper(strings.TrimPrefix(kind, "image/"))
	switch kind {
	case "":
		return nil, "", "not a PNG, JPEG, GIF or WebP image"
	case "image/webp":
		w, h, ok := webpSize(data)
		if !ok {
			return nil, "", "a WebP file whose size cannot be read"
		}
		if max(w, h) > ImageMaxEdge || len(data) > ImageMaxBytes {
			return nil, "", fmt.Sprintf("a %dx%d WebP image, too large to pass on (at most %d px and %d MB) and den cannot scale WebP; convert it first (e.g. to PNG) with shell_execute", w, h, ImageMaxEdge, ImageMaxBytes>>20)
		}
		return &llm.Image{MediaType: kind, Data: data}, fmt.Sprintf("WebP %dx%d", w, h), ""
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Sprintf("a damaged %s image (%v)", name, err)
	}
	info := fmt.Sprintf("%s %dx%d", name, cfg.Width, cfg.Height)
	if max(cfg.Width, cfg.Height) <= ImageMaxEdge && len(data) <= ImageMaxBytes {
		return &llm.Image{MediaType: kind, Data: data}, info, ""
	}
	if cfg.Width*cfg.Height > imageMaxPixels {
		return nil, "", fmt.Sprintf("a %dx%d image, too large to decode (more than %d pixels); scale it down first with shell_execute", cfg.Width, cfg.Height, imageMaxPixels)
	}
	src, err := decode(kind, data)
	if err != nil {
		return nil, "", fmt.Sprintf("a damaged %s image (%v)", name, err)
	}
	b := src.Bounds()
	scale := min(1, float64(ImageMaxEdge)/float64(max(b.Dx(), b.Dy())))
	w, h := max(1, int(float64(b.Dx())*scale+0.5)), max(1, int(float64(b.Dy())*scale+0.5))
	for {
		dst := downscale(src, w, h)
		out, mediaType, err := encode(dst, kind)
		if err != nil {
			return nil, "", fmt.Sprintf("cannot encode the scaled image (%v)", err)
		}
		if len(out) <= ImageMaxBytes {
			return &llm.Image{MediaType: mediaType, Data: out}, fmt.Sprintf("%s | scaled to %dx%d for viewing", info, w, h), ""
		}
		// Still too many bytes: shrink further.
		w, h = max(1, w*3/4), max(1, h*3/4)
	}
}

func decode(kind string, data []byte) (image.Image, error) {
	r := bytes.NewReader(data)
	switch kind {
	case "image/png":
		return png.Decode(r)
	case "image/jpeg":
		return jpeg.Decode(r)
	case "image/gif":
		return gif.Decode(r) // the first frame
	}
	return nil, fmt.Errorf("unsupported %s", kind)
}

// encode writes a scaled image: JPEG stays JPEG, PNG and GIF become
// PNG, unless the PNG is too large, then JPEG.
func encode(img *image.RGBA, kind string) ([]byte, string, error) {
	var b bytes.Buffer
	if kind != "image/jpeg" {
		if err := png.Encode(&b, img); err != nil {
			return nil, "", err
		}
		if b.Len() <= ImageMaxBytes {
			return b.Bytes(), "image/png", nil
		}
		b.Reset()
	}
	if err := jpeg.Encode(&b, opaque(img), &jpeg.Options{Quality: 85}); err != nil {
		return nil, "", err
	}
	return b.Bytes(), "image/jpeg", nil
}

// opaque lays img over white, for JPEG, which has no transparency.
func opaque(img *image.RGBA) image.Image {
	out := image.NewRGBA(img.Bounds())
	draw.Draw(out, out.Bounds(), image.White, image.Point{}, draw.Src)
	draw.Draw(out, out.Bounds(), img, img.Bounds().Min, draw.Over)
	return out
}

// downscale shrinks src to w×h with a box filter: each pixel is the mean
// of the source pixels it covers (premultiplied, so transparent pixels
// lend no colour).
func downscale(src image.Image, w, h int) *image.RGBA {
	rgba, ok := src.(*image.RGBA)
	if !ok || rgba.Bounds().Min != (image.Point{}) {
		rgba = image.NewRGBA(image.Rect(0, 0, src.Bounds().Dx(), src.Bounds().Dy()))
		draw.Draw(rgba, rgba.Bounds(), src, src.Bounds().Min, draw.Src)
	}
	sw, sh := rgba.Bounds().Dx(), rgba.Bounds().Dy()
	if w >= sw && h >= sh {
		return rgba
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		y0, y1 := y*sh/h, max((y+1)*sh/h, y*sh/h+1)
		for x := range w {
			x0, x1 := x*sw/w, max((x+1)*sw/w, x*sw/w+1)
			var r, g, b, a, n uint32
			for sy := y0; sy < y1; sy++ {
				row := rgba.Pix[sy*rgba.Stride+x0*4 : sy*rgba.Stride+x1*4]
				for i := 0; i < len(row); i += 4 {
					r += uint32(row[i])
					g += uint32(row[i+1])
					b += uint32(row[i+2])
					a += uint32(row[i+3])
					n++
				}
			}
			o := dst.PixOffset(x, y)
			dst.Pix[o] = uint8((r + n/2) / n)
			dst.Pix[o+1] = uint8((g + n/2) / n)
			dst.Pix[o+2] = uint8((b + n/2) / n)
			dst.Pix[o+3] = uint8((a + n/2) / n)
		}
	}
	return dst
}

// webpSize reads a WebP image's width and height from its first chunk.
func webpSize(b []byte) (w, h int, ok bool) {
	if len(b) < 30 {
		return 0, 0, false
	}
	switch string(b[12:16]) {
	case "VP8 ": // lossy: frame tag, start code, then 14-bit sizes
		if b[23] != 0x9d || b[24] != 0x01 || b[25] != 0x2a {
			return 0, 0, false
		}
		return int(binary.LittleEndian.Uint16(b[26:]) & 0x3fff), int(binary.LittleEndian.Uint16(b[28:]) & 0x3fff), true
	case "VP8L": // lossless: signature, then 14-bit sizes minus one
		if b[20] != 0x2f {
			return 0, 0, false
		}
		v := binary.LittleEndian.Uint32(b[21:])
		return int(v&0x3fff) + 1, int(v>>14&0x3fff) + 1, true
	case "VP8X": // extended: 24-bit canvas sizes minus one
		w := int(b[24]) | int(b[25])<<8 | int(b[26])<<16
		h := int(b[27]) | int(b[28])<<8 | int(b[29])<<16
		return w + 1, h + 1, true
	}
	return 0, 0, false
}
