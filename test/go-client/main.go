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
	return json.NewEncoder(os.Stdout).Encode(out)
}
