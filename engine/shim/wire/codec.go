package wire

import (
	"time"

	"github.com/hutch-engine/hutch/internal/tinyjson"
)

// The wire types encode and decode themselves through package tinyjson, so
// that the shim links no encoding/json (DESIGN §7); encoding/json in the
// engine calls the same methods. Keys are those the struct tags name; a
// key the reader does not know is skipped, a null leaves the field alone.

func setStr(dst *string, v []byte) (err error) {
	*dst, err = tinyjson.String(v)
	return err
}

func setInt(dst *int, v []byte) error {
	n, err := tinyjson.Int(v, 64)
	*dst = int(n)
	return err
}

func setInt64(dst *int64, v []byte) (err error) {
	*dst, err = tinyjson.Int(v, 64)
	return err
}

func setUint16(dst *uint16, v []byte) error {
	n, err := tinyjson.Uint(v, 16)
	*dst = uint16(n)
	return err
}

func setBool(dst *bool, v []byte) (err error) {
	*dst, err = tinyjson.Bool(v)
	return err
}

func setTime(dst *time.Time, v []byte) (err error) {
	*dst, err = tinyjson.Time(v)
	return err
}

func setRaw(dst *[]byte, v []byte) error {
	*dst = append([]byte(nil), v...)
	return nil
}

// members walks an object, skipping nulls.
func members(b []byte, fn func(k string, v []byte) error) error {
	return tinyjson.Members(b, func(k string, v []byte) error {
		if tinyjson.IsNull(v) {
			return nil
		}
		return fn(k, v)
	})
}

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
	return members(b, func(k string, v []byte) error {
		switch k {
		case "op":
			return setStr(&r.Op, v)
		case "signal":
			return setInt(&r.Signal, v)
		case "h":
			return setUint16(&r.Height, v)
		case "w":
			return setUint16(&r.Width, v)
		case "stdin":
			return setBool(&r.Stdin, v)
		case "stdout":
			return setBool(&r.Stdout, v)
		case "stderr":
			return setBool(&r.Stderr, v)
		case "execId":
			return setStr(&r.ExecID, v)
		case "process":
			return setRaw((*[]byte)(&r.Process), v)
		case "tty":
			return setBool(&r.Tty, v)
		case "detach":
			return setBool(&r.Detach, v)
		}
		return nil
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

func (r *Response) decode(k string, v []byte) error {
	switch k {
	case "error":
		return setStr(&r.Error, v)
	case "class":
		return setStr(&r.Class, v)
	case "exitCode":
		return setInt(&r.ExitCode, v)
	case "pid":
		return setInt(&r.Pid, v)
	case "state":
		r.State = &State{}
		return r.State.UnmarshalJSON(v)
	case "exit":
		r.Exit = &ExitStatus{}
		return r.Exit.UnmarshalJSON(v)
	case "exec":
		r.Exec = &ExecState{}
		return r.Exec.UnmarshalJSON(v)
	}
	return nil
}

// MarshalJSON encodes r as its struct tags say.
func (r *Response) MarshalJSON() ([]byte, error) { return r.encode(tinyjson.NewObject(nil)).End(), nil }

// UnmarshalJSON decodes what MarshalJSON encodes.
func (r *Response) UnmarshalJSON(b []byte) error { return members(b, r.decode) }

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
	return members(b, func(k string, v []byte) error {
		switch k {
		case "ExitCode":
			return setInt(&st.ExitCode, v)
		case "OOMKilled":
			return setBool(&st.OOMKilled, v)
		case "StartedAt":
			return setTime(&st.StartedAt, v)
		case "FinishedAt":
			return setTime(&st.FinishedAt, v)
		case "Error":
			return setStr(&st.Error, v)
		}
		return nil
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
	return members(b, func(k string, v []byte) error {
		switch k {
		case "ID":
			return setStr(&st.ID, v)
		case "Pid":
			return setInt(&st.Pid, v)
		case "ShimPid":
			return setInt(&st.ShimPid, v)
		case "Status":
			return setStr((*string)(&st.Status), v)
		case "StartedAt":
			return setTime(&st.StartedAt, v)
		case "Exit":
			st.Exit = &ExitStatus{}
			return st.Exit.UnmarshalJSON(v)
		case "ExitFile":
			return setStr(&st.ExitFile, v)
		case "Tty":
			return setBool(&st.Tty, v)
		case "OpenStdin":
			return setBool(&st.OpenStdin, v)
		}
		return nil
	})
}

// MarshalJSON encodes st with its field names as keys.
func (st *ExecState) MarshalJSON() ([]byte, error) {
	return tinyjson.NewObject(nil).Str("ID", st.ID).Int("Pid", int64(st.Pid)).Bool("Running", st.Running).Int("ExitCode", int64(st.ExitCode)).End(), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (st *ExecState) UnmarshalJSON(b []byte) error {
	return members(b, func(k string, v []byte) error {
		switch k {
		case "ID":
			return setStr(&st.ID, v)
		case "Pid":
			return setInt(&st.Pid, v)
		case "Running":
			return setBool(&st.Running, v)
		case "ExitCode":
			return setInt(&st.ExitCode, v)
		}
		return nil
	})
}
