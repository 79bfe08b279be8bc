package install

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hutch-engine/hutch/internal/atomicfile"
)

// ContextName is the docker CLI context hutch install creates.
const ContextName = "hutch"

// dockerConfigDir is the docker CLI's configuration directory:
// $DOCKER_CONFIG, else ~/.docker.
func dockerConfigDir() (string, error) {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".docker"), nil
}

// contextMeta is the docker CLI's meta.json of a context
// (contexts/meta/<sha256 of the name>/meta.json).
type contextMeta struct {
	Name      string                     `json:"Name"`
	Metadata  contextMetadata            `json:"Metadata"`
	Endpoints map[string]contextEndpoint `json:"Endpoints"`
}

type contextMetadata struct {
	Description string `json:"Description"`
}

type contextEndpoint struct {
	Host          string `json:"Host"`
	SkipTLSVerify bool   `json:"SkipTLSVerify"`
}

// contextDir is where the CLI keeps the context's meta.json.
func contextDir(configDir string) string {
	sum := sha256.Sum256([]byte(ContextName))
	return filepath.Join(configDir, "contexts", "meta", hex.EncodeToString(sum[:]))
}

// writeContext writes the hutch context pointing at socket, as `docker
// context create hutch --docker host=unix://socket` does. It reports
// whether anything changed.
func writeContext(configDir, socket string) (bool, error) {
	m := contextMeta{
		Name:      ContextName,
		Metadata:  contextMetadata{Description: "hutch (hutch install)"},
		Endpoints: map[string]contextEndpoint{"docker": {Host: "unix://" + socket}},
	}
	b, err := json.Marshal(m)
	if err != nil {
		return false, err
	}
	dir := contextDir(configDir)
	p := filepath.Join(dir, "meta.json")
	if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, b) {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	return true, atomicfile.Write(p, b, 0o644, false)
}

// removeContext removes the hutch context, and makes the default one
// current again where hutch's was. It reports whether anything changed.
func removeContext(configDir string) (bool, error) {
	dir := contextDir(configDir)
	_, err := os.Stat(dir)
	changed := err == nil
	if err := os.RemoveAll(dir); err != nil {
		return false, err
	}
	cur, err := currentContext(configDir)
	if err != nil {
		return changed, err
	}
	if cur == ContextName {
		return true, setCurrentContext(configDir, "")
	}
	return changed, nil
}

// currentContext is config.json's currentContext.
func currentContext(configDir string) (string, error) {
	cfg, err := readConfig(configDir)
	if err != nil {
		return "", err
	}
	var cur string
	if raw, ok := cfg["currentContext"]; ok {
		if err := json.Unmarshal(raw, &cur); err != nil {
			return "", fmt.Errorf("%s: currentContext: %w", filepath.Join(configDir, "config.json"), err)
		}
	}
	return cur, nil
}

// setCurrentContext sets config.json's currentContext ("" removes it),
// keeping every other setting of the file.
func setCurrentContext(configDir, name string) error {
	cfg, err := readConfig(configDir)
	if err != nil {
		return err
	}
	if name == "" {
		delete(cfg, "currentContext")
	} else {
		cfg["currentContext"], _ = json.Marshal(name)
	}
	b, err := json.MarshalIndent(cfg, "", "\t")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(configDir, "config.json"), append(b, '\n'), 0o600, false)
}

func readConfig(configDir string) (map[string]json.RawMessage, error) {
	p := filepath.Join(configDir, "config.json")
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]json.RawMessage{}, nil
	}
	if err != nil {
		return nil, err
	}
	cfg := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(b)) == 0 {
		return cfg, nil
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return cfg, nil
}
