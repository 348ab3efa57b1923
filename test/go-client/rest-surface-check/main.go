// Command rest-surface-check drives the smaller REST routes go-buildkite calls (issue 35 item 3) against a running
// stack with the official client (v4): User.CurrentUser, Meta.Get, ListEmojis, RateLimit.Get, Annotations.Create,
// CreateForJob, ListByBuild, ListByJob, Delete and DeleteForJob, Jobs.ReprioritizeJob, and last AccessTokens.Revoke,
// after which the same token's AccessTokens.Get must fail. It prints what it decoded as one JSON object, so the
// end-to-end suite can assert that field names and JSON types decode as real clients expect, and exits non-zero when
// any call or decode fails.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/buildkite/go-buildkite/v4"
)

type errorOut struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

type result struct {
	User             buildkite.User           `json:"user"`
	Meta             buildkite.Meta           `json:"meta"`
	Emojis           []buildkite.Emoji        `json:"emojis"`
	RateLimit        buildkite.RateLimit      `json:"rate_limit"`
	Created          buildkite.Annotation     `json:"created"`
	Appended         buildkite.Annotation     `json:"appended"`
	CreatedForJob    buildkite.Annotation     `json:"created_for_job"`
	Listed           []buildkite.Annotation   `json:"listed"`
	ListedForJob     []buildkite.Annotation   `json:"listed_for_job"`
	DeleteStatus     int                      `json:"delete_status"`
	DeleteJobStatus  int                      `json:"delete_job_status"`
	AfterDelete      []buildkite.Annotation   `json:"after_delete"`
	Reprioritized    buildkite.Job            `json:"reprioritized"`
	BadPriority      errorOut                 `json:"bad_priority"`
	Clusters         []buildkite.Cluster      `json:"clusters"`
	ClusterCreated   buildkite.Cluster        `json:"cluster_created"`
	ClusterGot       buildkite.Cluster        `json:"cluster_got"`
	ClusterUpdated   buildkite.Cluster        `json:"cluster_updated"`
	TokenCreated     buildkite.ClusterToken   `json:"token_created"`
	Tokens           []buildkite.ClusterToken `json:"tokens"`
	TokenGot         buildkite.ClusterToken   `json:"token_got"`
	TokenDeleted     int                      `json:"token_deleted_status"`
	TokensAfter      []buildkite.ClusterToken `json:"tokens_after"`
	RevokeStatus     int                      `json:"revoke_status"`
	AfterRevokeError errorOut                 `json:"after_revoke"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "rest-surface-check:", err)
		os.Exit(1)
	}
}

func errorOf(err error) errorOut {
	if e, ok := err.(*buildkite.ErrorResponse); ok {
		return errorOut{Status: e.Response.StatusCode, Message: e.Message}
	}
	return errorOut{Message: fmt.Sprint(err)}
}

func run() error {
	env := map[string]string{}
	for _, name := range []string{"CONVEYOR_API_URL", "CONVEYOR_API_TOKEN", "CONVEYOR_ORG_SLUG", "CHECK_PIPELINE", "CHECK_BUILD", "CHECK_JOB"} {
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
	org, pipeline, number, job := env["CONVEYOR_ORG_SLUG"], env["CHECK_PIPELINE"], env["CHECK_BUILD"], env["CHECK_JOB"]
	var out result

	if out.User, _, err = client.User.CurrentUser(ctx); err != nil {
		return fmt.Errorf("current user: %w", err)
	}
	if out.Meta, _, err = client.Meta.Get(ctx); err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	if out.Emojis, _, err = client.ListEmojis(ctx, org); err != nil {
		return fmt.Errorf("emojis: %w", err)
	}
	if out.RateLimit, _, err = client.RateLimit.Get(ctx, org); err != nil {
		return fmt.Errorf("rate limit: %w", err)
	}

	create := buildkite.AnnotationCreate{Body: "**Hello** from go", Context: "go", Style: "info", Priority: 8}
	if out.Created, _, err = client.Annotations.Create(ctx, org, pipeline, number, create); err != nil {
		return fmt.Errorf("create annotation: %w", err)
	}
	appendTo := buildkite.AnnotationCreate{Body: " and again", Context: "go", Append: true}
	if out.Appended, _, err = client.Annotations.Create(ctx, org, pipeline, number, appendTo); err != nil {
		return fmt.Errorf("append annotation: %w", err)
	}
	forJob := buildkite.AnnotationCreate{Body: "job's own", Context: "job-go", Style: "warning"}
	if out.CreatedForJob, _, err = client.Annotations.CreateForJob(ctx, org, pipeline, number, job, forJob); err != nil {
		return fmt.Errorf("create job annotation: %w", err)
	}
	if out.Listed, _, err = client.Annotations.ListByBuild(ctx, org, pipeline, number, nil); err != nil {
		return fmt.Errorf("list annotations: %w", err)
	}
	if out.ListedForJob, _, err = client.Annotations.ListByJob(ctx, org, pipeline, number, job, nil); err != nil {
		return fmt.Errorf("list job annotations: %w", err)
	}
	resp, err := client.Annotations.Delete(ctx, org, pipeline, number, out.Created.ID)
	if err != nil {
		return fmt.Errorf("delete annotation: %w", err)
	}
	out.DeleteStatus = resp.StatusCode
	if resp, err = client.Annotations.DeleteForJob(ctx, org, pipeline, number, job, out.CreatedForJob.ID); err != nil {
		return fmt.Errorf("delete job annotation: %w", err)
	}
	out.DeleteJobStatus = resp.StatusCode
	if out.AfterDelete, _, err = client.Annotations.ListByBuild(ctx, org, pipeline, number, nil); err != nil {
		return fmt.Errorf("list annotations after delete: %w", err)
	}

	if out.Reprioritized, _, err = client.Jobs.ReprioritizeJob(ctx, org, pipeline, number, job, &buildkite.JobReprioritizationOptions{Priority: 42}); err != nil {
		return fmt.Errorf("reprioritize: %w", err)
	}
	if _, _, err = client.Jobs.ReprioritizeJob(ctx, org, pipeline, number, job, &buildkite.JobReprioritizationOptions{Priority: 2000000}); err == nil {
		return fmt.Errorf("reprioritize to 2000000 was taken")
	}
	out.BadPriority = errorOf(err)

	if out.ClusterCreated, _, err = client.Clusters.Create(ctx, org, buildkite.ClusterCreate{Name: "Go cluster", Description: "from go"}); err != nil {
		return fmt.Errorf("cluster create: %w", err)
	}
	if out.Clusters, _, err = client.Clusters.List(ctx, org, nil); err != nil {
		return fmt.Errorf("cluster list: %w", err)
	}
	if out.ClusterGot, _, err = client.Clusters.Get(ctx, org, out.ClusterCreated.ID); err != nil {
		return fmt.Errorf("cluster get: %w", err)
	}
	if out.ClusterUpdated, _, err = client.Clusters.Update(ctx, org, out.ClusterCreated.ID, buildkite.ClusterUpdate{Description: "changed by go"}); err != nil {
		return fmt.Errorf("cluster update: %w", err)
	}
	cid := out.ClusterCreated.ID
	if out.TokenCreated, _, err = client.ClusterTokens.Create(ctx, org, cid, buildkite.ClusterTokenCreateUpdate{Description: "go token"}); err != nil {
		return fmt.Errorf("cluster token create: %w", err)
	}
	if out.Tokens, _, err = client.ClusterTokens.List(ctx, org, cid, nil); err != nil {
		return fmt.Errorf("cluster token list: %w", err)
	}
	if out.TokenGot, _, err = client.ClusterTokens.Get(ctx, org, cid, out.TokenCreated.ID); err != nil {
		return fmt.Errorf("cluster token get: %w", err)
	}
	if resp, err = client.ClusterTokens.Delete(ctx, org, cid, out.TokenCreated.ID); err != nil {
		return fmt.Errorf("cluster token delete: %w", err)
	}
	out.TokenDeleted = resp.StatusCode
	if out.TokensAfter, _, err = client.ClusterTokens.List(ctx, org, cid, nil); err != nil {
		return fmt.Errorf("cluster token list after delete: %w", err)
	}

	if resp, err = client.AccessTokens.Revoke(ctx); err != nil {
		return fmt.Errorf("revoke: %w", err)
	}
	out.RevokeStatus = resp.StatusCode
	if _, _, err = client.AccessTokens.Get(ctx); err == nil {
		return fmt.Errorf("the revoked token still works")
	}
	out.AfterRevokeError = errorOf(err)
	return json.NewEncoder(os.Stdout).Encode(out)
}
