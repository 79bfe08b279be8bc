package wire

import (
	"github.com/hutch-engine/hutch/internal/tinyjson"
)

// MarshalJSON encodes c as its struct tags say.
func (c *Config) MarshalJSON() ([]byte, error) {
	rot := tinyjson.NewObject(nil)
	if c.LogRotation.MaxSize != 0 {
		rot.Int("maxSize", c.LogRotation.MaxSize)
	}
	if c.LogRotation.MaxFiles != 0 {
		rot.Int("maxFiles", int64(c.LogRotation.MaxFiles))
	}
	o := tinyjson.NewObject(nil).Str("id", c.ID).Str("stateDir", c.StateDir).Str("socketPath", c.SocketPath).
		Str("logPath", c.LogPath).Raw("logRotation", rot.End()).Str("exitFile", c.ExitFile)
	for _, f := range []struct {
		k string
		v bool
	}{{"tty", c.Tty}, {"openStdin", c.OpenStdin}, {"stdinOnce", c.StdinOnce}} {
		if f.v {
			o.Bool(f.k, true)
		}
	}
	if c.Height != 0 {
		o.Int("height", int64(c.Height))
	}
	if c.Width != 0 {
		o.Int("width", int64(c.Width))
	}
	if c.Debug {
		o.Bool("debug", true)
	}
	return o.Str("runtimeBinary", c.RuntimeBinary).End(), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (c *Config) UnmarshalJSON(b []byte) error {
	return members(b, func(k string, v []byte) error {
		switch k {
		case "id":
			return setStr(&c.ID, v)
		case "stateDir":
			return setStr(&c.StateDir, v)
		case "socketPath":
			return setStr(&c.SocketPath, v)
		case "logPath":
			return setStr(&c.LogPath, v)
		case "logRotation":
			return members(v, func(k string, v []byte) error {
				switch k {
				case "maxSize":
					return setInt64(&c.LogRotation.MaxSize, v)
				case "maxFiles":
					return setInt(&c.LogRotation.MaxFiles, v)
				}
				return nil
			})
		case "exitFile":
			return setStr(&c.ExitFile, v)
		case "tty":
			return setBool(&c.Tty, v)
		case "openStdin":
			return setBool(&c.OpenStdin, v)
		case "stdinOnce":
			return setBool(&c.StdinOnce, v)
		case "height":
			return setUint16(&c.Height, v)
		case "width":
			return setUint16(&c.Width, v)
		case "debug":
			return setBool(&c.Debug, v)
		case "runtimeBinary":
			return setStr(&c.RuntimeBinary, v)
		}
		return nil
	})
}

// MarshalJSON encodes r as its struct tags say.
func (r *RuntimeRequest) MarshalJSON() ([]byte, error) {
	o := tinyjson.NewObject(nil).Str("op", r.Op).Str("bundle", r.Bundle)
	if len(r.Files) > 0 {
		o.Strings("files", r.Files)
	}
	if len(r.Process) > 0 {
		o.Raw("process", r.Process)
	}
	return o.End(), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (r *RuntimeRequest) UnmarshalJSON(b []byte) error {
	return members(b, func(k string, v []byte) (err error) {
		switch k {
		case "op":
			return setStr(&r.Op, v)
		case "bundle":
			return setStr(&r.Bundle, v)
		case "files":
			r.Files, err = tinyjson.Strings(v)
			return err
		case "process":
			return setRaw((*[]byte)(&r.Process), v)
		}
		return nil
	})
}

// MarshalJSON encodes r: Response's members and its own.
func (r *RuntimeReply) MarshalJSON() ([]byte, error) {
	o := r.Response.encode(tinyjson.NewObject(nil))
	if r.Fifo != "" {
		o.Str("fifo", r.Fifo)
	}
	if r.NeedsDelete {
		o.Bool("needsDelete", true)
	}
	if r.StateDir != "" {
		o.Str("stateDir", r.StateDir)
	}
	if r.OOMKilled {
		o.Bool("oomKilled", true)
	}
	return o.End(), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (r *RuntimeReply) UnmarshalJSON(b []byte) error {
	return members(b, func(k string, v []byte) error {
		switch k {
		case "fifo":
			return setStr(&r.Fifo, v)
		case "needsDelete":
			return setBool(&r.NeedsDelete, v)
		case "stateDir":
			return setStr(&r.StateDir, v)
		case "oomKilled":
			return setBool(&r.OOMKilled, v)
		}
		return r.Response.decode(k, v)
	})
}
