package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"
)

// Swarm is the swarm phase: the engine's idle memory outside a swarm and
// as the one manager of a swarm with no service (hutch-swarm counted in
// the tree), and the time from a task container's kill to its
// replacement running (restart delay 0: SwarmKit's default of 5 s would
// be most of it).
type Swarm struct {
	IdleOff MemSample `json:"idle_outside_swarm"`
	IdleOn  MemSample `json:"idle_swarm_manager"`
	Replace Dist      `json:"task_replacement"`
}

// swarmRuns is how many task containers the phase kills.
const swarmRuns = 10

func benchSwarm(ctx context.Context, e *env, res *Results) error {
	if err := e.stopDaemon(); err != nil {
		return err
	}
	d, err := e.daemon(ctx)
	if err != nil {
		return err
	}
	defer e.stopDaemon()
	if err := sleep(ctx, settle); err != nil {
		return err
	}
	if res.Swarm.IdleOff, err = readTree(d.cmd.Process.Pid); err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	if _, err := d.api.SwarmInit(ctx, client.SwarmInitOptions{ListenAddr: addr}); err != nil {
		return fmt.Errorf("swarm init: %w (daemon log %s)", err, d.logPath)
	}
	defer d.api.SwarmLeave(context.WithoutCancel(ctx), client.SwarmLeaveOptions{Force: true})
	if err := sleep(ctx, settle); err != nil {
		return err
	}
	if res.Swarm.IdleOn, err = readTree(d.cmd.Process.Pid); err != nil {
		return err
	}

	one, zero := uint64(1), time.Duration(0)
	spec := swarm.ServiceSpec{
		Annotations: swarm.Annotations{Name: "bench"},
		TaskTemplate: swarm.TaskSpec{
			ContainerSpec: &swarm.ContainerSpec{Image: e.busybox, Args: []string{"sleep", "3600"}},
			RestartPolicy: &swarm.RestartPolicy{Condition: swarm.RestartPolicyConditionAny, Delay: &zero},
		},
		Mode: swarm.ServiceMode{Replicated: &swarm.ReplicatedService{Replicas: &one}},
	}
	if _, err := d.api.ServiceCreate(ctx, client.ServiceCreateOptions{Spec: spec}); err != nil {
		return fmt.Errorf("service create: %w", err)
	}
	id, err := waitTask(ctx, d.api, "")
	if err != nil {
		return err
	}
	for range swarmRuns {
		t0 := time.Now()
		if _, err := d.api.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
			return fmt.Errorf("kill task container: %w", err)
		}
		if id, err = waitTask(ctx, d.api, id); err != nil {
			return err
		}
		res.Swarm.Replace.add(time.Since(t0))
	}
	return nil
}

// waitTask polls for the running task container of service bench other
// than old.
func waitTask(ctx context.Context, api *client.Client, old string) (string, error) {
	deadline := time.Now().Add(60 * time.Second)
	f := make(client.Filters).Add("label", "com.docker.swarm.service.name=bench")
	for time.Now().Before(deadline) {
		list, err := api.ContainerList(ctx, client.ContainerListOptions{Filters: f})
		if err != nil {
			return "", err
		}
		for _, c := range list.Items {
			if c.ID != old {
				return c.ID, nil
			}
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("no running task container of service bench within 60s")
}
