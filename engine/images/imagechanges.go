package images

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
)

// The "changes" of docker import and docker commit (-c) are Dockerfile
// instructions applied to the image config. Docker accepts the ones that
// only change the config; so does ApplyChanges. As Docker's builder does,
// ENV, LABEL, EXPOSE, USER, WORKDIR, STOPSIGNAL and VOLUME expand
// $VARIABLES against the config's environment as it stands, earlier
// changes' ENV included: "ENV PATH=/x:$PATH" prepends to the image's
// PATH. CMD, ENTRYPOINT, HEALTHCHECK and ONBUILD keep them for the shell.

type changeState struct {
	cfg    *dockerspec.DockerOCIImageConfig
	cmdSet bool // a CMD came before: an ENTRYPOINT keeps it
	lex    *shell.Lex
}

var changeInstructions = map[string]func(*changeState, string) error{
	"cmd":         (*changeState).cmd,
	"entrypoint":  (*changeState).entrypoint,
	"env":         (*changeState).env,
	"label":       (*changeState).label,
	"expose":      (*changeState).expose,
	"user":        (*changeState).user,
	"workdir":     (*changeState).workdir,
	"stopsignal":  (*changeState).stopSignal,
	"volume":      (*changeState).volume,
	"onbuild":     (*changeState).onBuild,
	"healthcheck": (*changeState).healthcheck,
}

// ApplyChanges applies Dockerfile instructions ("CMD [\"sh\"]",
// "ENV A=b C=d") to cfg. A change may hold several lines. Errors are
// errdefs.ErrInvalidArgument.
func ApplyChanges(cfg *dockerspec.DockerOCIImageConfig, changes []string) error {
	st := &changeState{cfg: cfg, lex: shell.NewLex('\\')}
	for _, change := range changes {
		// The lexer reports invalid UTF-8 on the daemon's stderr; what it
		// makes of it, U+FFFD, is what the config can hold anyway.
		change = strings.ToValidUTF8(change, "\uFFFD")
		for _, line := range strings.Split(change, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			word, rest, _ := strings.Cut(line, " ")
			if i := strings.IndexAny(word, "\t"); i >= 0 {
				word, rest = word[:i], word[i+1:]+" "+rest
			}
			rest = strings.TrimSpace(rest)
			name := strings.ToLower(word)
			fn, ok := changeInstructions[name]
			if !ok {
				return errdefs.ErrInvalidArgument.WithMessage(name + " is not a valid change command")
			}
			if err := fn(st, rest); err != nil {
				return errdefs.ErrInvalidArgument.WithMessage(strings.ToUpper(name) + ": " + err.Error())
			}
		}
	}
	return nil
}

// command reads the exec form (a JSON array) or the shell form of CMD,
// ENTRYPOINT and HEALTHCHECK CMD.
func (st *changeState) command(rest string) (cmd []string, exec bool, err error) {
	if strings.HasPrefix(rest, "[") {
		var arr []string
		if json.Unmarshal([]byte(rest), &arr) == nil {
			return arr, true, nil
		}
	}
	if rest == "" {
		return nil, false, fmt.Errorf("requires at least one argument")
	}
	shell := st.cfg.Shell
	if len(shell) == 0 {
		shell = []string{"/bin/sh", "-c"}
	}
	return append(append([]string(nil), shell...), rest), false, nil
}

func (st *changeState) cmd(rest string) error {
	cmd, _, err := st.command(rest)
	if err != nil {
		return err
	}
	st.cfg.Cmd, st.cmdSet = cmd, true
	return nil
}

func (st *changeState) entrypoint(rest string) error {
	ep, _, err := st.command(rest)
	if err != nil {
		return err
	}
	st.cfg.Entrypoint = ep
	if !st.cmdSet {
		st.cfg.Cmd = nil // as in a Dockerfile: the base image's CMD no longer applies
	}
	return nil
}

func (st *changeState) env(rest string) error {
	kvs, err := st.keyValues(rest)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		replaced := false
		for i, e := range st.cfg.Env {
			if k, _, _ := strings.Cut(e, "="); k == kv[0] {
				st.cfg.Env[i], replaced = kv[0]+"="+kv[1], true
			}
		}
		if !replaced {
			st.cfg.Env = append(st.cfg.Env, kv[0]+"="+kv[1])
		}
	}
	return nil
}

func (st *changeState) label(rest string) error {
	kvs, err := st.keyValues(rest)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		if st.cfg.Labels == nil {
			st.cfg.Labels = map[string]string{}
		}
		st.cfg.Labels[kv[0]] = kv[1]
	}
	return nil
}

func (st *changeState) expose(rest string) error {
	var words []string
	for _, w := range strings.Fields(rest) {
		// A variable may hold several ports ("EXPOSE $PORTS"), as in
		// Docker: EXPOSE alone splits its expansions into words.
		ws, err := st.lex.ProcessWords(w, st.envGetter())
		if err != nil {
			return err
		}
		words = append(words, ws...)
	}
	if len(words) == 0 {
		return fmt.Errorf("requires at least one argument")
	}
	for _, w := range words {
		ports, proto, _ := strings.Cut(w, "/")
		if proto == "" {
			proto = "tcp"
		}
		proto = strings.ToLower(proto)
		if proto != "tcp" && proto != "udp" && proto != "sctp" {
			return fmt.Errorf("invalid proto: %s", proto)
		}
		lo, hi, isRange := strings.Cut(ports, "-")
		first, err := portNumber(lo)
		if err != nil {
			return err
		}
		last := first
		if isRange {
			if last, err = portNumber(hi); err != nil {
				return err
			}
			if last < first {
				return fmt.Errorf("invalid range specified for port: %s", w)
			}
		}
		if st.cfg.ExposedPorts == nil {
			st.cfg.ExposedPorts = map[string]struct{}{}
		}
		for p := first; p <= last; p++ {
			st.cfg.ExposedPorts[strconv.Itoa(p)+"/"+proto] = struct{}{}
		}
	}
	return nil
}

func portNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 65535 {
		return 0, fmt.Errorf("invalid port: %q", s)
	}
	return n, nil
}

func (st *changeState) user(rest string) error {
	if rest == "" {
		return fmt.Errorf("requires exactly one argument")
	}
	rest, err := st.expand(rest)
	if err != nil {
		return err
	}
	st.cfg.User = rest
	return nil
}

func (st *changeState) workdir(rest string) error {
	if rest == "" {
		return fmt.Errorf("requires exactly one argument")
	}
	rest, err := st.expand(rest)
	if err != nil {
		return err
	}
	if !path.IsAbs(rest) {
		rest = path.Join("/", st.cfg.WorkingDir, rest)
	}
	st.cfg.WorkingDir = path.Clean(rest)
	return nil
}

func (st *changeState) stopSignal(rest string) error {
	rest, err := st.expand(rest)
	if err != nil {
		return err
	}
	if rest == "" || strings.ContainsAny(rest, " \t") {
		return fmt.Errorf("requires exactly one argument")
	}
	if n, err := strconv.Atoi(rest); err == nil && (n < 1 || n > 64) {
		return fmt.Errorf("invalid signal: %s", rest)
	}
	st.cfg.StopSignal = rest
	return nil
}

func (st *changeState) volume(rest string) error {
	var vols []string
	if !strings.HasPrefix(rest, "[") || json.Unmarshal([]byte(rest), &vols) != nil {
		vols = strings.Fields(rest)
	}
	if len(vols) == 0 {
		return fmt.Errorf("requires at least one argument")
	}
	for _, v := range vols {
		v, err := st.expand(v)
		if err != nil {
			return err
		}
		if v = strings.TrimSpace(v); v == "" {
			return fmt.Errorf("volume specified can not be an empty string")
		}
		if st.cfg.Volumes == nil {
			st.cfg.Volumes = map[string]struct{}{}
		}
		st.cfg.Volumes[v] = struct{}{}
	}
	return nil
}

func (st *changeState) onBuild(rest string) error {
	trigger, args, _ := strings.Cut(rest, " ")
	trigger = strings.ToUpper(trigger)
	switch trigger {
	case "":
		return fmt.Errorf("requires at least one argument")
	case "ONBUILD":
		return fmt.Errorf("chaining ONBUILD via `ONBUILD ONBUILD` isn't allowed")
	case "FROM", "MAINTAINER":
		return fmt.Errorf("%s isn't allowed as an ONBUILD trigger", trigger)
	}
	st.cfg.OnBuild = append(st.cfg.OnBuild, strings.TrimSpace(trigger+" "+strings.TrimSpace(args)))
	return nil
}

func (st *changeState) healthcheck(rest string) error {
	hc := &dockerspec.HealthcheckConfig{}
	for strings.HasPrefix(rest, "--") {
		flag, after, _ := strings.Cut(rest, " ")
		rest = strings.TrimSpace(after)
		name, value, ok := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
		if !ok {
			return fmt.Errorf("flag --%s needs a value", name)
		}
		if name == "retries" {
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 {
				return fmt.Errorf("invalid retries: %q", value)
			}
			hc.Retries = n
			continue
		}
		d, err := time.ParseDuration(value)
		if err != nil || (d != 0 && d < time.Millisecond) {
			return fmt.Errorf("invalid duration for --%s: %q (at least 1ms)", name, value)
		}
		switch name {
		case "interval":
			hc.Interval = d
		case "timeout":
			hc.Timeout = d
		case "start-period":
			hc.StartPeriod = d
		case "start-interval":
			hc.StartInterval = d
		default:
			return fmt.Errorf("unknown flag: --%s", name)
		}
	}
	kind, args, _ := strings.Cut(rest, " ")
	switch strings.ToUpper(kind) {
	case "NONE":
		if strings.TrimSpace(args) != "" {
			return fmt.Errorf("NONE takes no arguments")
		}
		st.cfg.Healthcheck = &dockerspec.HealthcheckConfig{Test: []string{"NONE"}}
		return nil
	case "CMD":
		args = strings.TrimSpace(args)
		if strings.HasPrefix(args, "[") {
			var arr []string
			if json.Unmarshal([]byte(args), &arr) == nil {
				hc.Test = append([]string{"CMD"}, arr...)
				st.cfg.Healthcheck = hc
				return nil
			}
		}
		if args == "" {
			return fmt.Errorf("missing command after HEALTHCHECK CMD")
		}
		hc.Test = []string{"CMD-SHELL", args}
		st.cfg.Healthcheck = hc
		return nil
	}
	return fmt.Errorf("unknown type %q: want CMD or NONE", kind)
}
