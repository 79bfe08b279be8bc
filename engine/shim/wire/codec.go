package wire

import (
	"github.com/hutch-engine/hutch/internal/tinyjson"
)

type fields = map[string]tinyjson.Field

// RawJSON is a value kept as JSON (encoding/json's RawMessage, without
// linking encoding/json).
type RawJSON []byte

// MarshalJSON returns r itself, or null.
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("null"), nil
	}
	return r, nil
}

// UnmarshalJSON keeps a copy of b.
func (r *RawJSON) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

// The wire types encode and decode themselves through package tinyjson, so
// that the shim links no encoding/json (docs/design.md, Performance goals); encoding/json in the
// engine calls the same methods. Keys are those the struct tags name; a
// key the reader does not know is skipped, a null leaves the field alone.

// MarshalJSON encodes r as its struct tags say.
func (r *Request) MarshalJSON() ([]byte, error) {
	o := tinyjson.NewObject(nil).Str("op", r.Op)
	if r.Signal != 0 {
		o.Int("signal", int64(r.Signal))
	}
	if r.Height != 0 {
		o.Int("h", int64(r.Height))
	}
	if r.Width != 0 {
		o.Int("w", int64(r.Width))
	}
	for _, f := range []struct {
		k string
		v bool
	}{{"stdin", r.Stdin}, {"stdout", r.Stdout}, {"stderr", r.Stderr}} {
		if f.v {
			o.Bool(f.k, true)
		}
	}
	if r.ExecID != "" {
		o.Str("execId", r.ExecID)
	}
	if len(r.Process) > 0 {
		o.Raw("process", r.Process)
	}
	if r.Tty {
		o.Bool("tty", true)
	}
	if r.Detach {
		o.Bool("detach", true)
	}
	return o.End(), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (r *Request) UnmarshalJSON(b []byte) error {
	return tinyjson.Decode(b, fields{
		"op": tinyjson.StringInto(&r.Op), "signal": tinyjson.IntInto(&r.Signal),
		"h": tinyjson.Uint16Into(&r.Height), "w": tinyjson.Uint16Into(&r.Width),
		"stdin": tinyjson.BoolInto(&r.Stdin), "stdout": tinyjson.BoolInto(&r.Stdout), "stderr": tinyjson.BoolInto(&r.Stderr),
		"execId": tinyjson.StringInto(&r.ExecID), "process": tinyjson.RawInto((*[]byte)(&r.Process)),
		"tty": tinyjson.BoolInto(&r.Tty), "detach": tinyjson.BoolInto(&r.Detach),
	})
}

func (r *Response) encode(o *tinyjson.Object) *tinyjson.Object {
	if r.Error != "" {
		o.Str("error", r.Error)
	}
	if r.Class != "" {
		o.Str("class", r.Class)
	}
	if r.ExitCode != 0 {
		o.Int("exitCode", int64(r.ExitCode))
	}
	if r.Pid != 0 {
		o.Int("pid", int64(r.Pid))
	}
	if r.State != nil {
		b, _ := r.State.MarshalJSON()
		o.Raw("state", b)
	}
	if r.Exit != nil {
		b, _ := r.Exit.MarshalJSON()
		o.Raw("exit", b)
	}
	if r.Exec != nil {
		b, _ := r.Exec.MarshalJSON()
		o.Raw("exec", b)
	}
	return o
}

func (r *Response) fields() fields {
	return fields{
		"error": tinyjson.StringInto(&r.Error), "class": tinyjson.StringInto(&r.Class),
		"exitCode": tinyjson.IntInto(&r.ExitCode), "pid": tinyjson.IntInto(&r.Pid),
		"state": func(v []byte) error {
			r.State = &State{}
			return r.State.UnmarshalJSON(v)
		},
		"exit": func(v []byte) error {
			r.Exit = &ExitStatus{}
			return r.Exit.UnmarshalJSON(v)
		},
		"exec": func(v []byte) error {
			r.Exec = &ExecState{}
			return r.Exec.UnmarshalJSON(v)
		},
	}
}

// MarshalJSON encodes r as its struct tags say.
func (r *Response) MarshalJSON() ([]byte, error) { return r.encode(tinyjson.NewObject(nil)).End(), nil }

// UnmarshalJSON decodes what MarshalJSON encodes.
func (r *Response) UnmarshalJSON(b []byte) error { return tinyjson.Decode(b, r.fields()) }

// MarshalJSON encodes st with its field names as keys.
func (st *ExitStatus) MarshalJSON() ([]byte, error) {
	o := tinyjson.NewObject(nil).Int("ExitCode", int64(st.ExitCode)).Bool("OOMKilled", st.OOMKilled)
	if !st.StartedAt.IsZero() {
		o.Time("StartedAt", st.StartedAt)
	}
	return o.Time("FinishedAt", st.FinishedAt).Str("Error", st.Error).End(), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (st *ExitStatus) UnmarshalJSON(b []byte) error {
	return tinyjson.Decode(b, fields{
		"ExitCode": tinyjson.IntInto(&st.ExitCode), "OOMKilled": tinyjson.BoolInto(&st.OOMKilled),
		"StartedAt": tinyjson.TimeInto(&st.StartedAt), "FinishedAt": tinyjson.TimeInto(&st.FinishedAt),
		"Error": tinyjson.StringInto(&st.Error),
	})
}

// MarshalJSON encodes st with its field names as keys.
func (st *State) MarshalJSON() ([]byte, error) {
	o := tinyjson.NewObject(nil).Str("ID", st.ID).Int("Pid", int64(st.Pid)).Int("ShimPid", int64(st.ShimPid)).Str("Status", string(st.Status))
	if !st.StartedAt.IsZero() {
		o.Time("StartedAt", st.StartedAt)
	}
	if st.Exit != nil {
		b, _ := st.Exit.MarshalJSON()
		o.Raw("Exit", b)
	}
	return o.Str("ExitFile", st.ExitFile).Bool("Tty", st.Tty).Bool("OpenStdin", st.OpenStdin).End(), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (st *State) UnmarshalJSON(b []byte) error {
	return tinyjson.Decode(b, fields{
		"ID": tinyjson.StringInto(&st.ID), "Pid": tinyjson.IntInto(&st.Pid), "ShimPid": tinyjson.IntInto(&st.ShimPid),
		"Status": tinyjson.StringInto(&st.Status), "StartedAt": tinyjson.TimeInto(&st.StartedAt),
		"Exit": func(v []byte) error {
			st.Exit = &ExitStatus{}
			return st.Exit.UnmarshalJSON(v)
		},
		"ExitFile": tinyjson.StringInto(&st.ExitFile), "Tty": tinyjson.BoolInto(&st.Tty), "OpenStdin": tinyjson.BoolInto(&st.OpenStdin),
	})
}

// MarshalJSON encodes st with its field names as keys.
func (st *ExecState) MarshalJSON() ([]byte, error) {
	return tinyjson.NewObject(nil).Str("ID", st.ID).Int("Pid", int64(st.Pid)).Bool("Running", st.Running).Int("ExitCode", int64(st.ExitCode)).End(), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (st *ExecState) UnmarshalJSON(b []byte) error {
	return tinyjson.Decode(b, fields{
		"ID": tinyjson.StringInto(&st.ID), "Pid": tinyjson.IntInto(&st.Pid),
		"Running": tinyjson.BoolInto(&st.Running), "ExitCode": tinyjson.IntInto(&st.ExitCode),
	})
}
