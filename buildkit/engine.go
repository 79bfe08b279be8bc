package buildkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/hutch-engine/hutch/buildkit/proxy"
	"github.com/moby/moby/client"
	"github.com/opencontainers/go-digest"
)

// engineClient is the engine's Docker API, on its socket: the one way
// images cross between BuildKit and the engine's store.
type engineClient struct {
	api *client.Client
}

func newEngineClient(socket string) (*engineClient, error) {
	// Its only loads are of builds' results (LoadOriginHeader).
	c, err := client.New(client.WithHost("unix://"+socket),
		client.WithHTTPHeaders(map[string]string{proxy.LoadOriginHeader: "build"}))
	if err != nil {
		return nil, err
	}
	return &engineClient{api: c}, nil
}

func (e *engineClient) Close() error { return e.api.Close() }

// engineImage is what BuildKit needs of an image record.
type engineImage struct {
	ID     string
	layers []digest.Digest
	// tags are the image's tags, normalised (docker.io/library/x:latest).
	tags map[string]bool
}

// inspectImage finds the engine's image by name or id: ErrNotFound when
// it has none.
func (e *engineClient) inspectImage(ctx context.Context, ref string) (*engineImage, error) {
	res, err := e.api.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("image %s: %w", ref, cerrdefs.ErrNotFound)
		}
		return nil, err
	}
	img := &engineImage{ID: res.ID, tags: map[string]bool{}}
	for _, t := range res.RepoTags {
		if named, err := reference.ParseNormalizedNamed(t); err == nil {
			img.tags[named.String()] = true
		}
	}
	if res.RootFS.Type == "layers" {
		for _, l := range res.RootFS.Layers {
			d, err := digest.Parse(l)
			if err != nil {
				return nil, fmt.Errorf("image %s: layer %q: %w", ref, l, err)
			}
			img.layers = append(img.layers, d)
		}
	}
	return img, nil
}

// saveImage streams the engine's docker save of id.
func (e *engineClient) saveImage(ctx context.Context, id string) (io.ReadCloser, error) {
	return e.api.ImageSave(ctx, []string{id})
}

// loadImage has the engine load a docker-archive and returns the first
// error its progress stream reports.
func (e *engineClient) loadImage(ctx context.Context, archive io.Reader) error {
	res, err := e.api.ImageLoad(ctx, archive, client.ImageLoadWithQuiet(true))
	if err != nil {
		return err
	}
	defer res.Close()
	dec := json.NewDecoder(res)
	for {
		var msg struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if msg.ErrorDetail != nil && msg.ErrorDetail.Message != "" {
			return errors.New(msg.ErrorDetail.Message)
		}
		if msg.Error != "" {
			return errors.New(msg.Error)
		}
	}
}

// tag names the engine's image id ref.
func (e *engineClient) tag(ctx context.Context, id, ref string) error {
	_, err := e.api.ImageTag(ctx, client.ImageTagOptions{Source: id, Target: ref})
	return err
}
