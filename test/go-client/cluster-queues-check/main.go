// Command cluster-queues-check drives a cluster's queues (issue 35 item 1) against a running stack with the official
// client (v4): ClusterQueues.Create, List, Get, Update, Pause (with a note), Resume and Delete, a Create with a key
// already taken (its 422), a build of a pipeline of the cluster whose scheduled job (no agent has taken it) names the
// queue its step targets (Builds.Get's cluster_queue_id), and the cluster's Delete while it still has a queue
// (refused), while a pipeline still names it (refused), and once it has neither. It
// prints what it decoded as one JSON object, so the end-to-end suite can assert field names and JSON types decode as
// real clients expect, and exits non-zero when a call that must work fails.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/buildkite/go-buildkite/v4"
)

type errorOut struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

type result struct {
	Created         buildkite.ClusterQueue   `json:"created"`
	Listed          []buildkite.ClusterQueue `json:"listed"`
	Got             buildkite.ClusterQueue   `json:"got"`
	Updated         buildkite.ClusterQueue   `json:"updated"`
	Paused          buildkite.ClusterQueue   `json:"paused"`
	ResumeStatus    int                      `json:"resume_status"`
	AfterResume     buildkite.ClusterQueue   `json:"after_resume"`
	Duplicate       errorOut                 `json:"duplicate"`
	ClusterRefused  errorOut                 `json:"cluster_refused"`
	ScheduledJob    buildkite.Job            `json:"scheduled_job"`
	PipelineRefused errorOut                 `json:"pipeline_refused"`
	PipelineDeleted int                      `json:"pipeline_deleted_status"`
	DeleteStatus    int                      `json:"delete_status"`
	AfterDelete     errorOut                 `json:"after_delete"`
	ClusterDeleted  int                      `json:"cluster_deleted_status"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cluster-queues-check:", err)
		os.Exit(1)
	}
}

func errorOf(err error) errorOut {
	if e, ok := err.(*buildkite.ErrorResponse); ok {
		return errorOut{Status: e.Response.StatusCode, Message: e.Message}
	}
	if err == nil {
		return errorOut{}
	}
	return errorOut{Message: err.Error()}
}

func run() error {
	client, err := buildkite.NewOpts(
		buildkite.WithBaseURL(os.Getenv("CONVEYOR_API_URL")+"/"),
		buildkite.WithTokenAuth(os.Getenv("CONVEYOR_API_TOKEN")),
	)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	org := os.Getenv("CONVEYOR_ORG_SLUG")
	cluster := os.Getenv("CHECK_CLUSTER")
	out := result{}

	if out.Created, _, err = client.ClusterQueues.Create(ctx, org, cluster, buildkite.ClusterQueueCreate{Key: "go-linux", Description: "from go"}); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	id := out.Created.ID
	if out.Listed, _, err = client.ClusterQueues.List(ctx, org, cluster, nil); err != nil {
		return fmt.Errorf("list: %w", err)
	}
	if out.Got, _, err = client.ClusterQueues.Get(ctx, org, cluster, id); err != nil {
		return fmt.Errorf("get: %w", err)
	}
	if out.Updated, _, err = client.ClusterQueues.Update(ctx, org, cluster, id, buildkite.ClusterQueueUpdate{Description: "changed by go"}); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if out.Paused, _, err = client.ClusterQueues.Pause(ctx, org, cluster, id, buildkite.ClusterQueuePause{Note: "maintenance"}); err != nil {
		return fmt.Errorf("pause: %w", err)
	}
	resp, err := client.ClusterQueues.Resume(ctx, org, cluster, id)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	out.ResumeStatus = resp.StatusCode
	if out.AfterResume, _, err = client.ClusterQueues.Get(ctx, org, cluster, id); err != nil {
		return fmt.Errorf("get after resume: %w", err)
	}
	_, _, err = client.ClusterQueues.Create(ctx, org, cluster, buildkite.ClusterQueueCreate{Key: "go-linux"})
	out.Duplicate = errorOf(err)
	// A build of a pipeline of the cluster: its job waits for an agent of the queue (there is none) and names it.
	pipeline, _, err := client.Pipelines.Create(ctx, org, buildkite.CreatePipeline{
		Name:          "Go queue " + id[:8],
		Repository:    "https://example.com/queue.git",
		ClusterID:     cluster,
		Configuration: "steps:\n  - command: echo queued\n    agents:\n      queue: go-linux\n",
	})
	if err != nil {
		return fmt.Errorf("pipeline create: %w", err)
	}
	created, _, err := client.Builds.Create(ctx, org, pipeline.Slug, buildkite.CreateBuild{Commit: "HEAD", Branch: "main"})
	if err != nil {
		return fmt.Errorf("build create: %w", err)
	}
	got, _, err := client.Builds.Get(ctx, org, pipeline.Slug, fmt.Sprint(created.Number), nil)
	if err != nil {
		return fmt.Errorf("build get: %w", err)
	}
	if len(got.Jobs) != 1 {
		return fmt.Errorf("the build has %d jobs", len(got.Jobs))
	}
	out.ScheduledJob = got.Jobs[0]
	_, err = client.Clusters.Delete(ctx, org, cluster)
	out.ClusterRefused = errorOf(err)
	if resp, err = client.ClusterQueues.Delete(ctx, org, cluster, id); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	out.DeleteStatus = resp.StatusCode
	_, _, err = client.ClusterQueues.Get(ctx, org, cluster, id)
	out.AfterDelete = errorOf(err)
	_, err = client.Clusters.Delete(ctx, org, cluster)
	out.PipelineRefused = errorOf(err)
	if resp, err = client.Pipelines.Delete(ctx, org, pipeline.Slug); err != nil {
		return fmt.Errorf("pipeline delete: %w", err)
	}
	out.PipelineDeleted = resp.StatusCode
	if resp, err = client.Clusters.Delete(ctx, org, cluster); err != nil {
		return fmt.Errorf("cluster delete: %w", err)
	}
	out.ClusterDeleted = resp.StatusCode
	if out.ClusterDeleted != http.StatusNoContent {
		return fmt.Errorf("cluster delete answered %d", out.ClusterDeleted)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
