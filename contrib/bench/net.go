package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hutch-engine/hutch/storage/testimage"
)

// iperfSeconds is the length of each iperf3 run: short, the figure is a
// rate and settles within a second or two. netRounds rounds alternate the
// measures, so that load on the machine falls on all alike; each figure is
// the median of its rounds.
const (
	iperfSeconds = 3
	netRounds    = 3
)

// Net is the throughput figure: iperf3 (Debian's, also in the container)
// between the host's loopback and a container, in Gbit/s as iperf3's
// receiver counted them.
type Net struct {
	Seconds int `json:"seconds"`
	// Loopback is the baseline: server and client on the host's 127.0.0.1.
	Loopback Rate `json:"loopback"`
	// Published: the server in a container behind -p 127.0.0.1:PORT:5201,
	// the client on the host sending; PublishedReverse: the same with -R
	// (the container sends).
	Published        Rate `json:"published"`
	PublishedReverse Rate `json:"published_reverse"`
	// Outbound: the client in a container sending to the server on the
	// host's loopback, reached via host-gateway (slirp4netns).
	Outbound      Rate   `json:"outbound"`
	OutboundError string `json:"outbound_error,omitempty"`

	PublishedRatio float64 `json:"published_over_loopback"`
	ReverseRatio   float64 `json:"published_reverse_over_loopback"`
	OutboundRatio  float64 `json:"outbound_over_loopback"`
}

// Rate is one throughput measure: its runs and their median, Gbit/s.
type Rate struct {
	Runs   []float64 `json:"runs_gbps"`
	Median float64   `json:"median_gbps"`
}

func (r *Rate) summarize() {
	if len(r.Runs) > 0 {
		r.Median = median(r.Runs)
	}
}

// benchNet builds an image of the host's iperf3 (binary, its libraries and
// loader), loads it into the daemon through the registry, and measures the
// loopback baseline, a published port both ways, and outbound traffic.
// Every address is the host's loopback or one of the daemon's namespaces.
func benchNet(ctx context.Context, e *env, res *Results) error {
	iperf, err := exec.LookPath("iperf3")
	if err != nil {
		return fmt.Errorf("iperf3 is not installed (bash contrib/test/setup-root.sh installs it): %w", err)
	}
	img, err := testimage.HostBinary(iperf)
	if err != nil {
		return err
	}
	ref := e.regAddr + "/library/iperf3:latest"
	if err := testimage.Push(ctx, ref, img); err != nil {
		return fmt.Errorf("pushing the iperf3 image: %w", err)
	}
	d, err := e.daemon(ctx)
	if err != nil {
		return err
	}
	if _, err := d.pull(ctx, ref); err != nil {
		return fmt.Errorf("pulling the iperf3 image into hutch: %w", err)
	}
	cfgDir := filepath.Join(e.dir, "docker-config")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		return err
	}
	docker := func(args ...string) ([]byte, error) { return d.docker(ctx, e.cfg.docker, cfgDir, args...) }
	n := &res.Net
	n.Seconds = iperfSeconds

	// One server on the host's loopback serves the baseline and the
	// outbound runs; one in a container serves the published port.
	hostPort, err := freeLoopbackPort()
	if err != nil {
		return err
	}
	stop, err := hostIperfServer(ctx, iperf, hostPort)
	if err != nil {
		return err
	}
	defer stop()
	pubPort, err := freeLoopbackPort()
	if err != nil {
		return err
	}
	out, err := docker("run", "-d", "-p", fmt.Sprintf("127.0.0.1:%d:5201", pubPort), ref, iperf, "-s")
	if err != nil {
		return fmt.Errorf("starting the iperf3 server container: %w: %s (daemon log %s)", err, out, d.logPath)
	}
	id := strings.TrimSpace(string(out))
	defer func() {
		if out, err := docker("rm", "-f", id); err != nil {
			progress("   removing the iperf3 container: %v: %s", err, out)
		}
	}()

	for round := range netRounds {
		r, err := iperfClient(ctx, iperf, hostPort)
		if err != nil {
			return fmt.Errorf("loopback: %w", err)
		}
		n.Loopback.Runs = append(n.Loopback.Runs, r)
		if r, err = iperfClient(ctx, iperf, pubPort); err != nil {
			return fmt.Errorf("published port: %w (daemon log %s)", err, d.logPath)
		}
		n.Published.Runs = append(n.Published.Runs, r)
		if r, err = iperfClient(ctx, iperf, pubPort, "-R"); err != nil {
			return fmt.Errorf("published port, reverse: %w (daemon log %s)", err, d.logPath)
		}
		n.PublishedReverse.Runs = append(n.PublishedReverse.Runs, r)
		if n.OutboundError == "" {
			out, err := docker("run", "--rm", "--add-host", "host.docker.internal:host-gateway", ref,
				iperf, "-c", "host.docker.internal", "-p", strconv.Itoa(hostPort), "-t", strconv.Itoa(iperfSeconds), "-J")
			if err == nil {
				r, err = iperfRate(out)
			}
			if err != nil {
				// Not fatal: the figure says why it is missing.
				n.OutboundError = fmt.Sprintf("%v: %s", err, firstLines(out, 3))
				progress("   outbound failed: %s", n.OutboundError)
			} else {
				n.Outbound.Runs = append(n.Outbound.Runs, r)
			}
		}
		progress("   round %d: loopback %.2f, published %.2f, reverse %.2f, outbound %s Gbit/s", round+1,
			n.Loopback.Runs[round], n.Published.Runs[round], n.PublishedReverse.Runs[round], last(n.Outbound.Runs, round))
	}
	return nil
}

// last formats runs[i], or "-" when that run failed.
func last(runs []float64, i int) string {
	if i < len(runs) {
		return fmt.Sprintf("%.2f", runs[i])
	}
	return "-"
}

// hostIperfServer starts an iperf3 server on 127.0.0.1:port and returns
// what stops it. The clients find out when it listens.
func hostIperfServer(ctx context.Context, iperf string, port int) (stop func(), err error) {
	cmd := exec.CommandContext(ctx, iperf, "-s", "-B", "127.0.0.1", "-p", strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }, nil
}

// iperfClient runs iperf3 -c 127.0.0.1 -p port for iperfSeconds and
// returns the rate in Gbit/s. It tries again while the server does not
// answer yet (a published port accepts before the container listens).
func iperfClient(ctx context.Context, iperf string, port int, extra ...string) (float64, error) {
	args := append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", strconv.Itoa(iperfSeconds), "-J"}, extra...)
	var last error
	for range 50 {
		cctx, cancel := context.WithTimeout(ctx, time.Duration(iperfSeconds+20)*time.Second)
		out, err := exec.CommandContext(cctx, iperf, args...).Output()
		cancel()
		if err == nil {
			return iperfRate(out)
		}
		last = fmt.Errorf("iperf3 %s: %w: %s", strings.Join(args, " "), err, firstLines(out, 3))
		if !notListening(out) {
			return 0, last
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return 0, err
		}
	}
	return 0, last
}

// notListening recognises iperf3's errors for a server that is not there
// yet (refused, or a forward whose far end closed at once).
func notListening(out []byte) bool {
	s := string(out)
	return strings.Contains(s, "unable to connect") || strings.Contains(s, "closed unexpectedly") ||
		strings.Contains(s, "unable to receive") || strings.Contains(s, "unable to send") || strings.Contains(s, "reset by peer")
}

// iperfRate reads the receiver's rate from iperf3's JSON report, in
// Gbit/s.
func iperfRate(out []byte) (float64, error) {
	i := bytes.IndexByte(out, '{')
	if i < 0 {
		return 0, errors.New("no JSON report")
	}
	var rep struct {
		Error string `json:"error"`
		End   struct {
			Received struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.NewDecoder(bytes.NewReader(out[i:])).Decode(&rep); err != nil {
		return 0, fmt.Errorf("iperf3 report: %w", err)
	}
	if rep.Error != "" {
		return 0, errors.New(rep.Error)
	}
	if rep.End.Received.BitsPerSecond <= 0 {
		return 0, errors.New("iperf3 report: no data received")
	}
	return rep.End.Received.BitsPerSecond / 1e9, nil
}

func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(strings.TrimSpace(string(b)), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}
