package engine

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/docker/go-units"
	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/shim/jsonlog"
)

// Log drivers: hutch has three of Docker's, the ones that keep a
// container's output on this machine. json-file writes Docker's format at
// the LogPath inspect shows; local keeps the same lines in a file of its
// own (Docker's local driver has its own binary format, a detail of its
// daemon that no client reads: inspect shows no LogPath for it), with
// that driver's defaults (20 MB a file, 5 files, rotated files
// compressed); none keeps nothing, and docker logs says so. Either way
// the shim writes the file, and attach sees the output as it comes.
const (
	logJSONFile = "json-file"
	logLocal    = "local"
	logNone     = "none"
)

// remoteLogDrivers are Docker's other built-in drivers, which send logs
// elsewhere: known, but not here.
var remoteLogDrivers = map[string]bool{
	"awslogs": true, "etwlogs": true, "fluentd": true, "gcplogs": true, "gelf": true,
	"journald": true, "logentries": true, "splunk": true, "syslog": true,
}

// commonLogOpts are options both drivers take. json-file writes the
// attributes (labels, env and their -regex forms) into each line
// (logAttrs); the local driver's lines, as Docker's, carry none, and
// neither uses tag. mode and max-buffer-size are how Docker's daemon
// buffers lines: the shim writes them as it reads them.
var commonLogOpts = map[string]bool{
	"mode": true, "max-buffer-size": true,
	"labels": true, "labels-regex": true, "env": true, "env-regex": true, "tag": true,
}

// errLogsNotReadable is Docker's answer to docker logs of a container
// whose driver keeps no log.
var errLogsNotReadable = errdefs.ErrNotImplemented.WithMessage("configured logging driver does not support reading")

// checkDefaultLogConfig checks the daemon's log-driver and log-opts
// (daemon.json) at start, as Docker does.
func checkDefaultLogConfig(lc containertypes.LogConfig) error {
	if lc.Type == "" {
		lc.Type = logJSONFile
	}
	if _, err := logRotation(lc); err != nil {
		return fmt.Errorf("failed to set log opts: %w", err)
	}
	return nil
}

// mergeLogConfig gives a new container's log config the daemon's driver
// when it names none, and that driver's options it does not set, as
// Docker does at create; then checks it (400 for what Docker refuses,
// 501 for its drivers that send logs elsewhere).
func (e *Engine) mergeLogConfig(lc *containertypes.LogConfig) error {
	def := e.opts.LogConfig
	if def.Type == "" {
		def.Type = logJSONFile
	}
	if lc.Type == "" {
		lc.Type = def.Type
	}
	cfg := maps.Clone(lc.Config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	if lc.Type == def.Type {
		for k, v := range def.Config {
			if _, ok := cfg[k]; !ok {
				cfg[k] = v
			}
		}
	}
	lc.Config = cfg
	_, err := logRotation(*lc)
	return err
}

// logFile is where container c's shim writes its output: "" for none.
func (e *Engine) logFile(c *container.Container) string {
	switch c.HostConfig.LogConfig.Type {
	case logNone:
		return ""
	case logLocal:
		return filepath.Join(e.containers.Dir(c.ID), "local-logs", "container.log")
	}
	return c.LogPath
}

// logRotation reads a log config's options as its driver does.
func logRotation(lc containertypes.LogConfig) (jsonlog.Rotation, error) {
	switch {
	case lc.Type == logNone:
		// Docker takes any option for none.
		return jsonlog.Rotation{}, nil
	case remoteLogDrivers[lc.Type]:
		return jsonlog.Rotation{}, errdefs.ErrNotImplemented.WithMessage(fmt.Sprintf("logging driver %q is not supported: hutch keeps logs with json-file, local or none", lc.Type))
	case lc.Type != "" && lc.Type != logJSONFile && lc.Type != logLocal:
		return invalid("logger: no log driver named '%s' is registered", lc.Type)
	}
	if err := checkLogMode(lc.Config); err != nil {
		return jsonlog.Rotation{}, err
	}
	if lc.Type == logLocal {
		return localRotation(lc.Config)
	}
	var rot jsonlog.Rotation
	var compress bool
	for k, v := range lc.Config {
		switch k {
		case "max-size":
			if v == "-1" {
				continue
			}
			n, err := units.FromHumanSize(v)
			if err != nil || n <= 0 {
				return invalid("invalid value for log opt max-size: %q", v)
			}
			rot.MaxSize = n
		case "max-file":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return invalid("max-file cannot be less than 1")
			}
			rot.MaxFiles = n
		case "compress":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return invalid("invalid value for log opt compress: %q", v)
			}
			compress = b
		case "labels-regex", "env-regex":
			// Docker finds a bad expression only when the container
			// starts, and the start fails; refused at create here.
			if _, err := regexp.Compile(v); err != nil {
				return invalid("invalid value for log opt %s: %v", k, err)
			}
		default:
			if !commonLogOpts[k] {
				return invalid("unknown log opt '%s' for json-file log driver", k)
			}
		}
	}
	if compress && (rot.MaxFiles < 2 || rot.MaxSize == 0) {
		return invalid("compress cannot be true when max-file is less than 2 or max-size is not set")
	}
	if rot.MaxSize == 0 {
		// As Docker's json-file: without a size to rotate at, there is one
		// file whatever max-file says.
		rot.MaxFiles = 0
	}
	rot.Compress = compress
	return rot, nil
}

// logAttrs are the attributes json-file writes into each line of c's log,
// as Docker's: the labels the labels option names (comma-separated) or
// labels-regex matches, and the environment variables env names or
// env-regex matches, each with its value. nil for other drivers.
func logAttrs(c *container.Container) map[string]string {
	lc := c.HostConfig.LogConfig
	if lc.Type != logJSONFile && lc.Type != "" {
		return nil
	}
	if lc.Config["labels"] == "" && lc.Config["labels-regex"] == "" && lc.Config["env"] == "" && lc.Config["env-regex"] == "" {
		return nil // the usual case: no map of the environment at each start
	}
	env := map[string]string{}
	var labels map[string]string
	if c.Config != nil {
		for _, kv := range c.Config.Env {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		labels = c.Config.Labels
	}
	attrs := map[string]string{}
	pick(attrs, labels, lc.Config["labels"], lc.Config["labels-regex"])
	pick(attrs, env, lc.Config["env"], lc.Config["env-regex"])
	if len(attrs) == 0 {
		return nil
	}
	return attrs
}

// pick copies into attrs the entries of from that names lists or that
// pattern matches (an expression that does not compile matches nothing:
// create refused it).
func pick(attrs, from map[string]string, names, pattern string) {
	if names != "" {
		for _, k := range strings.Split(names, ",") {
			if v, ok := from[k]; ok {
				attrs[k] = v
			}
		}
	}
	if pattern == "" {
		return
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return
	}
	for k, v := range from {
		if re.MatchString(k) {
			attrs[k] = v
		}
	}
}

// invalid is a refused log option: Docker's 400 with its message.
func invalid(format string, a ...any) (jsonlog.Rotation, error) {
	return jsonlog.Rotation{}, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf(format, a...))
}

// localRotation reads the local driver's options over its defaults.
func localRotation(opts map[string]string) (jsonlog.Rotation, error) {
	rot := jsonlog.Rotation{MaxSize: 20 << 20, MaxFiles: 5, Compress: true}
	for k, v := range opts {
		switch k {
		case "max-size":
			n, err := units.FromHumanSize(v)
			if err != nil {
				return invalid("invalid value for max-size: %s", v)
			}
			if n < 0 {
				return invalid("max-size must not be negative")
			}
			rot.MaxSize = n
		case "max-file":
			n, err := strconv.Atoi(v)
			if err != nil {
				return invalid("invalid value for max-file: %s", v)
			}
			if n < 0 {
				return invalid("max-file must not be negative")
			}
			rot.MaxFiles = n
		case "compress":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return invalid("invalid boolean value for compress: %s", v)
			}
			rot.Compress = b
		default:
			if !commonLogOpts[k] {
				return invalid("unknown log opt '%s' for log driver local", k)
			}
		}
	}
	if rot.Compress && rot.MaxFiles <= 1 {
		return invalid("compression cannot be enabled when max file count is 1")
	}
	return rot, nil
}

// checkLogMode checks Docker's options of every driver: mode, and
// max-buffer-size, which only the non-blocking mode takes.
func checkLogMode(opts map[string]string) error {
	mode := containertypes.LogMode(opts["mode"])
	switch mode {
	case containertypes.LogModeBlocking, containertypes.LogModeNonBlock, containertypes.LogModeUnset:
	default:
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("logger: logging mode not supported: %s", mode))
	}
	if s, ok := opts["max-buffer-size"]; ok {
		if mode != containertypes.LogModeNonBlock {
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("logger: max-buffer-size option is only supported with 'mode=%s'", containertypes.LogModeNonBlock))
		}
		if _, err := units.RAMInBytes(s); err != nil {
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("error parsing option max-buffer-size: %v", err))
		}
	}
	return nil
}
