//go:build integration

package integration

import (
	"regexp"
	"strings"
	"testing"
)

// Legacy links on the default bridge: the linked container in /etc/hosts
// under its alias, its hostname and its name; Docker's checks at create
// and start; docker rm --link.
func TestLegacyLinks(t *testing.T) {
	d, ref := pulled(t)
	if out, err := d.Docker(t, "run", "-d", "--name", "db", "--hostname", "dbhost", ref, "sleep", "300"); err != nil {
		t.Fatal(err, out)
	}
	ip, err := d.Docker(t, "inspect", "--format", "{{.NetworkSettings.Networks.bridge.IPAddress}}", "db")
	ip = strings.TrimSpace(ip)
	if err != nil || ip == "" {
		t.Fatalf("db's address: %q %v", ip, err)
	}
	out, err := d.Docker(t, "run", "--rm", "--link", "db:database", ref, "sh", "-c", "cat /etc/hosts; ping -c 1 -W 2 database >/dev/null && echo reached")
	if err != nil {
		t.Fatalf("run --link db:database: %v %s", err, out)
	}
	if !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(ip)+`\s+database dbhost db$`).MatchString(out) || !strings.Contains(out, "reached") {
		t.Errorf("/etc/hosts with --link db:database (db at %s):\n%s", ip, out)
	}
	out, _ = d.Docker(t, "run", "--rm", "--link", "db", ref, "cat", "/etc/hosts")
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(ip) + `\s+db dbhost$`).MatchString(out) {
		t.Errorf("/etc/hosts with --link db:\n%s", out)
	}

	// A link to a container that does not exist is refused at create.
	before, _ := d.Docker(t, "ps", "-aq")
	if out, err := d.Docker(t, "create", "--link", "nosuch:x", ref, "true"); err == nil || !strings.Contains(out, "could not get container for nosuch") {
		t.Errorf("create --link nosuch: %v %s", err, out)
	}
	if after, _ := d.Docker(t, "ps", "-aq"); after != before {
		t.Errorf("the refused create left a container")
	}

	// The linked container must run when its parent starts.
	if out, err := d.Docker(t, "create", "--name", "web", "--link", "db", ref, "grep", "dbhost", "/etc/hosts"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := d.Docker(t, "stop", "-t", "0", "db"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := d.Docker(t, "start", "web"); err == nil || !strings.Contains(out, "Cannot link to a non running container: /db AS /web/db") {
		t.Errorf("start with db stopped: %v %s", err, out)
	}
	// rm --link takes the link away; the linked container stays.
	if out, err := d.Docker(t, "rm", "--link", "/web/db"); err != nil {
		t.Fatalf("rm --link /web/db: %v %s", err, out)
	}
	out, _ = d.Docker(t, "inspect", "--format", "{{len .HostConfig.Links}} {{.State.Status}}", "web", "db")
	if out != "0 created\n0 exited\n" {
		t.Errorf("after rm --link: %q", out)
	}
	if out, err := d.Docker(t, "start", "-a", "web"); err == nil {
		t.Errorf("web found db in /etc/hosts after its link was removed: %s", out)
	}
	if out, err := d.Docker(t, "rm", "--link", "/web/db"); err == nil {
		t.Errorf("a second rm --link: %s", out)
	}
}

// On a user network --link name:alias is an alias the embedded DNS
// answers for the linking container alone.
func TestLinksOnUserNetwork(t *testing.T) {
	d, ref := pulled(t)
	if out, err := d.Docker(t, "network", "create", "lnet"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := d.Docker(t, "run", "-d", "--name", "db2", "--network", "lnet", ref, "sleep", "300"); err != nil {
		t.Fatal(err, out)
	}
	ip, _ := d.Docker(t, "inspect", "--format", "{{.NetworkSettings.Networks.lnet.IPAddress}}", "db2")
	ip = strings.TrimSpace(ip)
	out, err := d.Docker(t, "run", "--rm", "--network", "lnet", "--link", "db2:store", ref, "nslookup", "store")
	if err != nil || ip == "" || !strings.Contains(out, "Address: "+ip) {
		t.Errorf("nslookup store with --link db2:store (db2 at %q): %v\n%s", ip, err, out)
	}
	out, _ = d.Docker(t, "create", "--network", "lnet", "--link", "db2:store", ref, "true")
	links, _ := d.Docker(t, "inspect", "--format", "{{.NetworkSettings.Networks.lnet.Links}}", strings.TrimSpace(out))
	if strings.TrimSpace(links) != "[db2:store]" {
		t.Errorf("the endpoint's links: %q", links)
	}
	d.Docker(t, "rm", "-f", "db2") // sleep ignores the daemon's SIGTERM
}
