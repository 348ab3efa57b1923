// Command schedules-check drives the pipeline schedule routes of a running stack with the official go-buildkite
// client (v4): PipelineSchedules' Create, List, Get, Update (a PATCH) and Delete, and a refused cron line. It prints
// what it decoded as one JSON object, so the end-to-end suite can assert that field names and JSON types decode as
// real clients expect, and exits non-zero when a call or decode fails.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/buildkite/go-buildkite/v4"
)

// apiError is a failed call as the client reports it.
type apiError struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

type result struct {
	Created       buildkite.PipelineSchedule   `json:"created"`
	Listed        []buildkite.PipelineSchedule `json:"listed"`
	Got           buildkite.PipelineSchedule   `json:"got"`
	Updated       buildkite.PipelineSchedule   `json:"updated"`
	BadCronline   apiError                     `json:"bad_cronline"`
	Deleted       int                          `json:"deleted_status"`
	AfterDelete   []buildkite.PipelineSchedule `json:"after_delete"`
	MissingStatus apiError                     `json:"missing"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "schedules-check:", err)
		os.Exit(1)
	}
}

// failure captures the status and message of a call that was meant to fail.
func failure(resp *buildkite.Response, err error) (apiError, error) {
	var e *buildkite.ErrorResponse
	if !errors.As(err, &e) {
		return apiError{}, fmt.Errorf("expected an ErrorResponse, got %v", err)
	}
	status := 0
	if e.Response != nil {
		status = e.Response.StatusCode
	} else if resp != nil {
		status = resp.StatusCode
	}
	return apiError{Status: status, Message: e.Message}, nil
}

func run() error {
	url, token := os.Getenv("CONVEYOR_API_URL"), os.Getenv("CONVEYOR_API_TOKEN")
	org, pipeline := os.Getenv("CONVEYOR_ORG_SLUG"), os.Getenv("CONVEYOR_PIPELINE")
	if url == "" || token == "" || org == "" || pipeline == "" {
		return errors.New("set CONVEYOR_API_URL, CONVEYOR_API_TOKEN, CONVEYOR_ORG_SLUG and CONVEYOR_PIPELINE")
	}
	client, err := buildkite.NewOpts(buildkite.WithTokenAuth(token), buildkite.WithBaseURL(url+"/"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := client.PipelineSchedules
	var out result

	if out.Created, _, err = s.Create(ctx, org, pipeline, buildkite.CreatePipelineSchedule{
		Label: "Nightly", Cronline: "0 2 * * * Europe/Berlin", Message: "From go-buildkite",
		Env: map[string]string{"NIGHTLY": "1"},
	}); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	id := out.Created.ID
	if out.Listed, _, err = s.List(ctx, org, pipeline, nil); err != nil {
		return fmt.Errorf("list: %w", err)
	}
	if out.Got, _, err = s.Get(ctx, org, pipeline, id); err != nil {
		return fmt.Errorf("get: %w", err)
	}
	disabled := false
	if out.Updated, _, err = s.Update(ctx, org, pipeline, id, buildkite.UpdatePipelineSchedule{
		Label: "Nightly build", Enabled: &disabled,
	}); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	_, resp, err := s.Update(ctx, org, pipeline, id, buildkite.UpdatePipelineSchedule{Cronline: "every night"})
	if out.BadCronline, err = failure(resp, err); err != nil {
		return fmt.Errorf("bad cronline: %w", err)
	}
	deleted, err := s.Delete(ctx, org, pipeline, id)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	out.Deleted = deleted.StatusCode
	if out.AfterDelete, _, err = s.List(ctx, org, pipeline, nil); err != nil {
		return fmt.Errorf("list after delete: %w", err)
	}
	_, missing, err := s.Get(ctx, org, pipeline, id)
	if out.MissingStatus, err = failure(missing, err); err != nil {
		return fmt.Errorf("get a deleted schedule: %w", err)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
