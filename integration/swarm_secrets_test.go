//go:build integration

package integration

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"
)

// dockerIn runs the docker CLI with stdin.
func dockerIn(t *testing.T, d *daemon, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(dockerCLI(t), args...)
	cmd.Env = append(cmd.Environ(), "DOCKER_HOST="+d.Host(), "DOCKER_CONFIG="+t.TempDir())
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Secrets and configs: created, listed, inspected and removed as on
// Docker, refused with Docker's message when empty or too big, and
// mounted into tasks at /run/secrets/<name> and the configs' targets.
func TestSwarmSecretsConfigs(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d, ref := pulled(t)
	swarmInit(t, d)
	if out, err := dockerIn(t, d, "topsecret", "secret", "create", "--label", "k=v", "pw", "-"); err != nil {
		t.Fatalf("docker secret create: %v\n%s", err, out)
	}
	if out, err := dockerIn(t, d, "key=value\n", "config", "create", "app.conf", "-"); err != nil {
		t.Fatalf("docker config create: %v\n%s", err, out)
	}
	// Sizes are SwarmKit's to check (the CLI refuses empty data itself).
	for _, tc := range []struct {
		kind string
		size int
		want string
	}{
		{"secret", 500 * 1024, "secret data must be larger than 0 and less than 512000 bytes"},
		{"config", 1000 * 1024, "config data must be larger than 0 and less than 1024000 bytes"},
	} {
		out, err := dockerIn(t, d, strings.Repeat("x", tc.size), tc.kind, "create", "bad", "-")
		if err == nil || !strings.Contains(out, "Error response from daemon: rpc error: code = InvalidArgument desc = "+tc.want) {
			t.Errorf("docker %s create of %d bytes: %v\n%s\nwant %q", tc.kind, tc.size, err, out, tc.want)
		}
	}
	c := d.Client(t)
	ctx := context.Background()
	if _, err := c.SecretCreate(ctx, client.SecretCreateOptions{Spec: swarm.SecretSpec{Annotations: swarm.Annotations{Name: "empty"}}}); !cerrdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "secret data must be larger than 0") {
		t.Errorf("SecretCreate with no data: %v, want an InvalidArgument error", err)
	}
	if _, err := c.ConfigCreate(ctx, client.ConfigCreateOptions{Spec: swarm.ConfigSpec{Annotations: swarm.Annotations{Name: "empty"}}}); !cerrdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "config data must be larger than 0") {
		t.Errorf("ConfigCreate with no data: %v, want an InvalidArgument error", err)
	}
	if _, err := c.SecretCreate(ctx, client.SecretCreateOptions{Spec: swarm.SecretSpec{Annotations: swarm.Annotations{Name: "bad/name"}, Data: []byte("x")}}); !cerrdefs.IsInvalidArgument(err) {
		t.Errorf("SecretCreate with a bad name: %v, want an InvalidArgument error", err)
	}
	if out, err := dockerIn(t, d, "again", "secret", "create", "pw", "-"); err == nil || !strings.Contains(out, "AlreadyExists") {
		t.Errorf("a second secret named pw: %v\n%s", err, out)
	}
	if out, err := d.Docker(t, "secret", "ls", "--format", "{{.Name}}"); err != nil || out != "pw\n" {
		t.Errorf("docker secret ls: %v %q (the refused ones must not exist)", err, out)
	}
	if out, err := d.Docker(t, "config", "ls", "--format", "{{.Name}}"); err != nil || out != "app.conf\n" {
		t.Errorf("docker config ls: %v %q", err, out)
	}
	if out, err := d.Docker(t, "secret", "inspect", "--format", "{{.Spec.Name}} {{.Spec.Labels.k}} {{len .Spec.Data}}", "pw"); err != nil || out != "pw v 0\n" {
		t.Errorf("docker secret inspect (no data shown): %v %q", err, out)
	}
	if out, err := d.Docker(t, "config", "inspect", "--format", "{{printf \"%s\" .Spec.Data}}", "app.conf"); err != nil || out != "key=value\n\n" {
		t.Errorf("docker config inspect: %v %q", err, out)
	}

	if out, err := d.Docker(t, "service", "create", "-d", "--name", "uses",
		"--secret", "pw", "--secret", "source=pw,target=/etc/pw.copy,mode=0400",
		"--config", "source=app.conf,target=/etc/app.conf", ref, "sleep", "3600"); err != nil {
		t.Fatalf("docker service create: %v\n%s", err, out)
	}
	ids := waitTasks(t, d, "uses", 1)
	for _, tc := range []struct{ cmd, want string }{
		{"cat /run/secrets/pw", "topsecret"},
		{"cat /etc/pw.copy", "topsecret"},
		{"stat -c %a /etc/pw.copy", "400\n"},
		{"stat -c %a /run/secrets/pw", "444\n"},
		{"cat /etc/app.conf", "key=value\n"},
	} {
		if out, err := d.Docker(t, "exec", ids[0], "sh", "-c", tc.cmd); err != nil || out != tc.want {
			t.Errorf("in the task, %s: %v %q, want %q", tc.cmd, err, out, tc.want)
		}
	}
	if out, err := d.Docker(t, "secret", "rm", "pw"); err == nil || !strings.Contains(out, "is in use by the following service: uses") {
		t.Errorf("docker secret rm of a secret in use: %v\n%s", err, out)
	}
	if out, err := d.Docker(t, "service", "rm", "uses"); err != nil {
		t.Fatalf("docker service rm: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"secret", "rm", "pw"}, {"config", "rm", "app.conf"}} {
		if out, err := d.Docker(t, args...); err != nil {
			t.Errorf("docker %v: %v\n%s", args, err, out)
		}
	}
	if out, err := d.Docker(t, "secret", "inspect", "pw"); err == nil || !strings.Contains(out, "Error response from daemon: secret pw not found") {
		t.Errorf("docker secret inspect after rm: %v\n%s", err, out)
	}
}
