// Command agents-check drives the job log and agent routes of a running stack with the official go-buildkite client
// (v4): a build whose jobs ran on a real agent, its job's log, the organization's agents, one agent, stopping it,
// and deleting the log. It prints what it decoded as one JSON object, so the end-to-end suite can assert that field
// names and JSON types decode as real clients expect, and exits non-zero when any call or decode fails.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/buildkite/go-buildkite/v4"
)

type result struct {
	Build        buildkite.Build   `json:"build"`
	Log          buildkite.JobLog  `json:"log"`
	Agents       []buildkite.Agent `json:"agents"`
	Agent        buildkite.Agent   `json:"agent"`
	StopStatus   int               `json:"stop_status"`
	DeleteStatus int               `json:"delete_status"`
	LogAfter     buildkite.JobLog  `json:"log_after_delete"`
	MissingAgent string            `json:"missing_agent_error"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "agents-check:", err)
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

func run() error {
	var env = map[string]string{}
	for _, name := range []string{"CONVEYOR_API_URL", "CONVEYOR_API_TOKEN", "CONVEYOR_ORG_SLUG", "CHECK_PIPELINE", "CHECK_BUILD", "CHECK_AGENT_NAME"} {
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
	org, pipeline, number := env["CONVEYOR_ORG_SLUG"], env["CHECK_PIPELINE"], env["CHECK_BUILD"]
	var out result

	if out.Build, _, err = client.Builds.Get(ctx, org, pipeline, number, nil); err != nil {
		return fmt.Errorf("get build: %w", err)
	}
	if len(out.Build.Jobs) == 0 {
		return fmt.Errorf("the build has no jobs")
	}
	jobID := out.Build.Jobs[0].ID
	if out.Log, _, err = client.Jobs.GetJobLog(ctx, org, pipeline, number, jobID); err != nil {
		return fmt.Errorf("get job log: %w", err)
	}
	if out.Agents, _, err = client.Agents.List(ctx, org, &buildkite.AgentListOptions{Name: env["CHECK_AGENT_NAME"]}); err != nil {
		return fmt.Errorf("list agents: %w", err)
	}
	if len(out.Agents) != 1 {
		return fmt.Errorf("listed %d agents named %s, want 1", len(out.Agents), env["CHECK_AGENT_NAME"])
	}
	if out.Agent, _, err = client.Agents.Get(ctx, org, out.Agents[0].ID); err != nil {
		return fmt.Errorf("get agent: %w", err)
	}
	if _, _, err = client.Agents.Get(ctx, org, "00000000-0000-4000-8000-000000000000"); err != nil {
		if e, ok := err.(*buildkite.ErrorResponse); ok {
			out.MissingAgent = e.Message
		}
	}
	resp, err := client.Agents.Stop(ctx, org, out.Agent.ID, false)
	if err != nil {
		return fmt.Errorf("stop agent: %w", err)
	}
	out.StopStatus = resp.StatusCode
	resp, err = client.Jobs.DeleteJobLog(ctx, org, pipeline, number, jobID)
	if err != nil {
		return fmt.Errorf("delete job log: %w", err)
	}
	out.DeleteStatus = resp.StatusCode
	if out.LogAfter, _, err = client.Jobs.GetJobLog(ctx, org, pipeline, number, jobID); err != nil {
		return fmt.Errorf("get job log after delete: %w", err)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
