// Command go-client-check drives a running stack with the official go-buildkite client and prints what it decoded
// as one JSON object, so the end-to-end suite can assert that field names and JSON types decode as real clients
// expect. It exits non-zero when any call or decode fails.
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
	Organizations []buildkite.Organization `json:"organizations"`
	Organization  buildkite.Organization   `json:"organization"`
	Members       []buildkite.Member       `json:"members"`
	MembersPage1  struct {
		Count    int `json:"count"`
		NextPage int `json:"next_page"`
		LastPage int `json:"last_page"`
	} `json:"members_page1"`
	Member       buildkite.Member      `json:"member"`
	AccessToken  buildkite.AccessToken `json:"access_token"`
	MissingOrg   string                `json:"missing_org_error"`
	MissingOrgSC int                   `json:"missing_org_status"`
	Builds       *buildsResult         `json:"builds,omitempty"`
}

// buildsResult is what the builds routes decoded into, when CONVEYOR_PIPELINE_SLUG names a pipeline to build.
type buildsResult struct {
	Created   buildkite.Build   `json:"created"`
	Listed    []buildkite.Build `json:"listed"`
	ListedOrg []buildkite.Build `json:"listed_org"`
	ListedAll []buildkite.Build `json:"listed_all"`
	Page1     struct {
		Count    int `json:"count"`
		NextPage int `json:"next_page"`
	} `json:"page1"`
	Got           buildkite.Build `json:"got"`
	Finished      buildkite.Build `json:"finished"`
	Canceled      buildkite.Build `json:"canceled"`
	CancelAgain   string          `json:"cancel_again_error"`
	CancelAgainSC int             `json:"cancel_again_status"`
	Rebuilt       buildkite.Build `json:"rebuilt"`
	MissingBuild  string          `json:"missing_build_error"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "go-client-check:", err)
		os.Exit(1)
	}
}

func run() error {
	base, token, org := os.Getenv("CONVEYOR_API_URL"), os.Getenv("CONVEYOR_API_TOKEN"), os.Getenv("CONVEYOR_ORG_SLUG")
	if base == "" || token == "" || org == "" {
		return fmt.Errorf("set CONVEYOR_API_URL, CONVEYOR_API_TOKEN and CONVEYOR_ORG_SLUG")
	}
	client, err := buildkite.NewOpts(buildkite.WithTokenAuth(token), buildkite.WithBaseURL(base+"/"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var out result
	if out.Organizations, _, err = client.Organizations.List(ctx, nil); err != nil {
		return fmt.Errorf("organizations list: %w", err)
	}
	if out.Organization, _, err = client.Organizations.Get(ctx, org); err != nil {
		return fmt.Errorf("organization get: %w", err)
	}
	if out.Members, _, err = client.Members.List(ctx, org, nil); err != nil {
		return fmt.Errorf("members list: %w", err)
	}
	page, resp, err := client.Members.List(ctx, org, &buildkite.MemberListOptions{ListOptions: buildkite.ListOptions{Page: 1, PerPage: 1}})
	if err != nil {
		return fmt.Errorf("members page 1: %w", err)
	}
	out.MembersPage1.Count, out.MembersPage1.NextPage, out.MembersPage1.LastPage = len(page), resp.NextPage, resp.LastPage
	if len(out.Members) > 0 {
		if out.Member, _, err = client.Members.Get(ctx, org, out.Members[0].UUID); err != nil {
			return fmt.Errorf("member get: %w", err)
		}
	}
	if out.AccessToken, _, err = client.AccessTokens.Get(ctx); err != nil {
		return fmt.Errorf("access token: %w", err)
	}
	_, resp, err = client.Organizations.Get(ctx, "no-such-org-anywhere")
	if errResp, ok := err.(*buildkite.ErrorResponse); ok {
		out.MissingOrg, out.MissingOrgSC = errResp.Message, resp.StatusCode
	} else {
		return fmt.Errorf("missing organization: expected an ErrorResponse, got %v", err)
	}
	if slug := os.Getenv("CONVEYOR_PIPELINE_SLUG"); slug != "" {
		if out.Builds, err = runBuilds(ctx, client, org, slug); err != nil {
			return err
		}
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// runBuilds creates a build of the pipeline, lists builds with filters, gets, cancels and rebuilds it, and gets the
// finished build CONVEYOR_FINISHED_BUILD names (one whose job ran on an agent), decoding every answer.
func runBuilds(ctx context.Context, client *buildkite.Client, org, slug string) (*buildsResult, error) {
	var out buildsResult
	var err error
	commit := "0123456789abcdef0123456789abcdef01234567"
	out.Created, _, err = client.Builds.Create(ctx, org, slug, buildkite.CreateBuild{
		Commit:                commit,
		Branch:                "go-client",
		Message:               "Built by go-buildkite",
		Env:                   map[string]string{"FROM": "go"},
		MetaData:              map[string]string{"client": "go-buildkite"},
		PullRequestID:         12,
		PullRequestBaseBranch: "main",
	})
	if err != nil {
		return nil, fmt.Errorf("build create: %w", err)
	}
	number := fmt.Sprint(out.Created.Number)
	filter := &buildkite.BuildsListOptions{
		Branch:      []string{"go-client"},
		State:       []string{"scheduled", "running"},
		MetaData:    buildkite.MetaDataFilters{MetaData: map[string]string{"client": "go-buildkite"}},
		CreatedFrom: time.Now().Add(-time.Hour),
	}
	if out.Listed, _, err = client.Builds.ListByPipeline(ctx, org, slug, filter); err != nil {
		return nil, fmt.Errorf("builds list by pipeline: %w", err)
	}
	if out.ListedOrg, _, err = client.Builds.ListByOrg(ctx, org, &buildkite.BuildsListOptions{Commit: commit}); err != nil {
		return nil, fmt.Errorf("builds list by organization: %w", err)
	}
	if out.ListedAll, _, err = client.Builds.List(ctx, &buildkite.BuildsListOptions{Branch: []string{"go-client"}}); err != nil {
		return nil, fmt.Errorf("builds list: %w", err)
	}
	page, resp, err := client.Builds.ListByPipeline(ctx, org, slug, &buildkite.BuildsListOptions{ListOptions: buildkite.ListOptions{Page: 1, PerPage: 1}})
	if err != nil {
		return nil, fmt.Errorf("builds page 1: %w", err)
	}
	out.Page1.Count, out.Page1.NextPage = len(page), resp.NextPage
	if out.Got, _, err = client.Builds.Get(ctx, org, slug, number, nil); err != nil {
		return nil, fmt.Errorf("build get: %w", err)
	}
	if finished := os.Getenv("CONVEYOR_FINISHED_BUILD"); finished != "" {
		if out.Finished, _, err = client.Builds.Get(ctx, org, slug, finished, &buildkite.BuildGetOptions{}); err != nil {
			return nil, fmt.Errorf("finished build get: %w", err)
		}
	}
	if out.Canceled, err = client.Builds.Cancel(ctx, org, slug, number); err != nil {
		return nil, fmt.Errorf("build cancel: %w", err)
	}
	_, err = client.Builds.Cancel(ctx, org, slug, number)
	if errResp, ok := err.(*buildkite.ErrorResponse); ok {
		out.CancelAgain, out.CancelAgainSC = errResp.Message, errResp.Response.StatusCode
	} else {
		return nil, fmt.Errorf("second cancel: expected an ErrorResponse, got %v", err)
	}
	if out.Rebuilt, err = client.Builds.Rebuild(ctx, org, slug, number); err != nil {
		return nil, fmt.Errorf("build rebuild: %w", err)
	}
	_, _, err = client.Builds.Get(ctx, org, slug, "999999", nil)
	if errResp, ok := err.(*buildkite.ErrorResponse); ok {
		out.MissingBuild = errResp.Message
	} else {
		return nil, fmt.Errorf("missing build: expected an ErrorResponse, got %v", err)
	}
	return &out, nil
}
