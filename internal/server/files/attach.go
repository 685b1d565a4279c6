package files

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"path"

	"den.dev/den/internal/server/auth"
	"den.dev/den/internal/server/reply"
)

// MaxAttachments is the most files one attachments request may send.
const MaxAttachments = 100

// Attachment is the JSON of one attached file.
type Attachment struct {
	Name        string `json:"name"`
	Path        string `json:"path"` // as the computer names it: /den/attachments/NAME
	Size        int64  `json:"size"`
	ContentType string `json:"content_type"`
}

// Attach answers POST /api/v1/sessions/{id}/attachments: each part of
// the multipart/form-data body in a field named "file" is saved in the
// computer's /den/attachments (mode 0644, the computer's), under a
// safe name made from its filename that no other entry has (see
// safeName). Other fields are skipped. It answers 201 with
// {"attachments": [Attachment...]}. The parts stream to disk; when one
// fails, none of the request's files is kept.
func (h *Handler) Attach(w http.ResponseWriter, r *http.Request) error {
	max := h.limit()
	auth.LimitBody(w, r, max)
	if err := tooLong(r, max); err != nil {
		return err
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "send the files as multipart/form-data, each in a field named file (%v)", err)
	}
	dir, folders, err := h.folder(r, attachments)
	if err != nil {
		return err
	}
	defer dir.Close()

	saved := []Attachment{}
	kept := false
	defer func() {
		if !kept {
			for _, a := range saved {
				dir.Remove(a.Name)
			}
		}
	}()
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return partError(err)
		}
		if part.FormName() != "file" {
			continue // NextPart skips the rest of it
		}
		if len(saved) == MaxAttachments {
			return badRequest("more than %d files in one request", MaxAttachments)
		}
		b := &body{r: part}
		name, n, err := dir.WriteNew(candidates(safeName(part.FileName())), b, 0o644, folders.Owner, max)
		if err != nil {
			return bodyError(b, err)
		}
		saved = append(saved, Attachment{
			Name:        name,
			Path:        path.Join(attachments, name),
			Size:        n,
			ContentType: partType(part.Header.Get("Content-Type"), name),
		})
	}
	if len(saved) == 0 {
		return badRequest("the request has no file: send each in a multipart field named file")
	}
	kept = true
	return reply.JSON(w, http.StatusCreated, map[string][]Attachment{"attachments": saved})
}

// partError is the error for a multipart body that could not be read
// between parts: over the limit as it is, anything else malformed.
func partError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return err
	}
	return badRequest("the multipart body is malformed or was cut short: %v", err)
}

// partType is the content type of an attachment: as the client sent
// it when it parses, else by the name's extension, else
// application/octet-stream.
func partType(declared, name string) string {
	if mt, params, err := mime.ParseMediaType(declared); err == nil {
		if t := mime.FormatMediaType(mt, params); t != "" {
			return t
		}
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}
