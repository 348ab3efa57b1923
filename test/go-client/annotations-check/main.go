// Command annotations-check drives the annotations list and the agent pause and resume routes of a running stack
// with the official go-buildkite client (v4): a build's annotations page by page, one job's annotations, pausing an
// agent with a note and a timeout, pausing it again (refused), reading it back paused, resuming it and reading it
// back. It prints what it decoded as one JSON object, so the end-to-end suite can assert that field names and JSON
// types decode as real clients expect, and exits non-zero when any call or decode fails.
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
	Annotations    []buildkite.Annotation `json:"annotations"`
	Pages          int                    `json:"pages"`
	JobAnnotations []buildkite.Annotation `json:"job_annotations"`
	PauseStatus    int                    `json:"pause_status"`
	PauseAgainErr  string                 `json:"pause_again_error"`
	Paused         buildkite.Agent        `json:"paused"`
	ResumeStatus   int                    `json:"resume_status"`
	Resumed        buildkite.Agent        `json:"resumed"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "annotations-check:", err)
		os.Exit(1)
	}
}

func run() error {
	env := map[string]string{}
	for _, name := range []string{"CONVEYOR_API_URL", "CONVEYOR_API_TOKEN", "CONVEYOR_ORG_SLUG", "CHECK_PIPELINE", "CHECK_BUILD", "CHECK_JOB", "CHECK_AGENT_ID"} {
		value := os.Getenv(name)
		if value == "" {
			return fmt.Errorf("%s is not set", name)
		}
		env[name] = value
	}
	client, err := buildkite.NewOpts(buildkite.WithTokenAuth(env["CONVEYOR_API_TOKEN"]), buildkite.WithBaseURL(env["CONVEYOR_API_URL"]+"/"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	org, pipeline, number, agentID := env["CONVEYOR_ORG_SLUG"], env["CHECK_PIPELINE"], env["CHECK_BUILD"], env["CHECK_AGENT_ID"]
	var out result

	// Two a page, following the Link header's next page as go-buildkite users do.
	opts := &buildkite.AnnotationListOptions{ListOptions: buildkite.ListOptions{PerPage: 2}}
	for {
		page, resp, err := client.Annotations.ListByBuild(ctx, org, pipeline, number, opts)
		if err != nil {
			return fmt.Errorf("list annotations: %w", err)
		}
		out.Annotations = append(out.Annotations, page...)
		out.Pages++
		if resp.NextPage == 0 || out.Pages > 10 {
			break
		}
		opts.Page = resp.NextPage
	}
	if out.JobAnnotations, _, err = client.Annotations.ListByJob(ctx, org, pipeline, number, env["CHECK_JOB"], nil); err != nil {
		return fmt.Errorf("list job annotations: %w", err)
	}

	resp, err := client.Agents.Pause(ctx, org, agentID, &buildkite.AgentPauseOptions{Note: "paused by go", TimeoutInMinutes: 15})
	if err != nil {
		return fmt.Errorf("pause agent: %w", err)
	}
	out.PauseStatus = resp.StatusCode
	if _, err = client.Agents.Pause(ctx, org, agentID, nil); err != nil {
		if e, ok := err.(*buildkite.ErrorResponse); ok {
			out.PauseAgainErr = e.Message
		}
	}
	if out.Paused, _, err = client.Agents.Get(ctx, org, agentID); err != nil {
		return fmt.Errorf("get paused agent: %w", err)
	}
	if resp, err = client.Agents.Resume(ctx, org, agentID); err != nil {
		return fmt.Errorf("resume agent: %w", err)
	}
	out.ResumeStatus = resp.StatusCode
	if out.Resumed, _, err = client.Agents.Get(ctx, org, agentID); err != nil {
		return fmt.Errorf("get resumed agent: %w", err)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
