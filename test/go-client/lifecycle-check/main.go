// Command lifecycle-check reads builds of a running stack with the official go-buildkite client (v4), as
// test/build-lifecycle.e2e.test.ts left them: each build with and without include_retried_jobs (retried jobs,
// retry_source, unblocked_by, triggered_build, triggered_from), a job's environment, and a manual retry of a failed
// job. It prints what it decoded as one JSON object, so the end-to-end suite can assert that field names and JSON
// types decode as real clients expect, and exits non-zero when any call or decode fails.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/buildkite/go-buildkite/v4"
)

type result struct {
	// "pipeline/number" → the build with its retried jobs.
	Builds map[string]buildkite.Build `json:"builds"`
	// "pipeline/number" → how many jobs the build shows without include_retried_jobs.
	DefaultJobCounts map[string]int    `json:"default_job_counts"`
	Env              map[string]string `json:"env"`
	Retried          buildkite.Job     `json:"retried"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lifecycle-check:", err)
		os.Exit(1)
	}
}

func need(name string) (string, error) {
	value := os.Getenv(name)
	if value == "" {
		return "", fmt.Errorf("%s is not set", name)
	}
	return value, nil
}

// jobRef splits "pipeline/number/job".
func jobRef(ref string) (string, string, string, error) {
	parts := strings.Split(ref, "/")
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("%q is not pipeline/number/job", ref)
	}
	return parts[0], parts[1], parts[2], nil
}

func run() error {
	var env = map[string]string{}
	for _, name := range []string{"CONVEYOR_API_URL", "CONVEYOR_API_TOKEN", "CONVEYOR_ORG_SLUG", "CHECK_BUILDS", "CHECK_ENV_JOB", "CHECK_RETRY_JOB"} {
		value, err := need(name)
		if err != nil {
			return err
		}
		env[name] = value
	}
	client, err := buildkite.NewOpts(buildkite.WithTokenAuth(env["CONVEYOR_API_TOKEN"]), buildkite.WithBaseURL(env["CONVEYOR_API_URL"]+"/"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	org := env["CONVEYOR_ORG_SLUG"]
	out := result{Builds: map[string]buildkite.Build{}, DefaultJobCounts: map[string]int{}}

	for _, ref := range strings.Split(env["CHECK_BUILDS"], ",") {
		pipeline, number, found := strings.Cut(ref, "/")
		if !found {
			return fmt.Errorf("%q is not pipeline/number", ref)
		}
		all := &buildkite.BuildGetOptions{BuildsListOptions: buildkite.BuildsListOptions{IncludeRetriedJobs: true}}
		build, _, err := client.Builds.Get(ctx, org, pipeline, number, all)
		if err != nil {
			return fmt.Errorf("get build %s with retried jobs: %w", ref, err)
		}
		out.Builds[ref] = build
		shown, _, err := client.Builds.Get(ctx, org, pipeline, number, nil)
		if err != nil {
			return fmt.Errorf("get build %s: %w", ref, err)
		}
		out.DefaultJobCounts[ref] = len(shown.Jobs)
	}

	pipeline, number, job, err := jobRef(env["CHECK_ENV_JOB"])
	if err != nil {
		return err
	}
	envs, _, err := client.Jobs.GetJobEnvironmentVariables(ctx, org, pipeline, number, job)
	if err != nil {
		return fmt.Errorf("get job env: %w", err)
	}
	out.Env = envs.EnvironmentVariables

	pipeline, number, job, err = jobRef(env["CHECK_RETRY_JOB"])
	if err != nil {
		return err
	}
	if out.Retried, _, err = client.Jobs.RetryJob(ctx, org, pipeline, number, job); err != nil {
		return fmt.Errorf("retry job: %w", err)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
