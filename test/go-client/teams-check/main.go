// Command teams-check drives the team, rule and registry token routes of a running stack with the official
// go-buildkite client (v4) and prints what it decoded as one JSON object, so the end-to-end suite can assert that
// field names and JSON types decode as real clients expect. go-buildkite v4 has no registry token service, so those
// calls go through the client's own NewRequest and Do into a copy of v5's PackageRegistryToken type. It exits
// non-zero when any call or decode fails.
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

// PackageRegistryToken is go-buildkite v5's type (package_registry_tokens.go), field for field.
type PackageRegistryToken struct {
	ID          string               `json:"id"`
	GraphQLID   string               `json:"graphql_id"`
	Description string               `json:"description"`
	URL         string               `json:"url"`
	Token       string               `json:"token"`
	CreatedAt   *buildkite.Timestamp `json:"created_at"`
	CreatedBy   struct {
		ID        string               `json:"id"`
		GraphQLID string               `json:"graphql_id"`
		Name      string               `json:"name"`
		Email     string               `json:"email"`
		AvatarURL string               `json:"avatar_url"`
		CreatedAt *buildkite.Timestamp `json:"created_at"`
	} `json:"created_by"`
	Organization struct {
		ID     string `json:"id"`
		Slug   string `json:"slug"`
		URL    string `json:"url"`
		WebURL string `json:"web_url"`
	} `json:"organization"`
	Registry struct {
		ID        string `json:"id"`
		GraphQLID string `json:"graphql_id"`
		Slug      string `json:"slug"`
		URL       string `json:"url"`
		WebURL    string `json:"web_url"`
	} `json:"registry"`
}

// apiError is a failed call as the client reports it.
type apiError struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

type result struct {
	Members struct {
		Created   buildkite.TeamMember   `json:"created"`
		Listed    []buildkite.TeamMember `json:"listed"`
		Page1     []buildkite.TeamMember `json:"page1"`
		NextPage  int                    `json:"next_page"`
		Got       buildkite.TeamMember   `json:"got"`
		Updated   buildkite.TeamMember   `json:"updated"`
		BadRole   apiError               `json:"bad_role"`
		Deleted   int                    `json:"deleted_status"`
		AfterList []buildkite.TeamMember `json:"after_delete"`
	} `json:"members"`
	Pipelines struct {
		Created buildkite.TeamPipeline   `json:"created"`
		Listed  []buildkite.TeamPipeline `json:"listed"`
		Got     buildkite.TeamPipeline   `json:"got"`
		Updated buildkite.TeamPipeline   `json:"updated"`
		Deleted int                      `json:"deleted_status"`
		Missing apiError                 `json:"missing"`
	} `json:"pipelines"`
	Suites struct {
		Created buildkite.TeamSuites   `json:"created"`
		Listed  []buildkite.TeamSuites `json:"listed"`
		Got     buildkite.TeamSuites   `json:"got"`
		Updated buildkite.TeamSuites   `json:"updated"`
		Deleted int                    `json:"deleted_status"`
	} `json:"suites"`
	Rules struct {
		Created   buildkite.Rule   `json:"created"`
		Listed    []buildkite.Rule `json:"listed"`
		Got       buildkite.Rule   `json:"got"`
		Duplicate apiError         `json:"duplicate"`
		Deleted   int              `json:"deleted_status"`
		Missing   apiError         `json:"missing"`
	} `json:"rules"`
	Tokens struct {
		Created       PackageRegistryToken   `json:"created"`
		CreatedStatus int                    `json:"created_status"`
		Listed        []PackageRegistryToken `json:"listed"`
		Got           PackageRegistryToken   `json:"got"`
		Updated       PackageRegistryToken   `json:"updated"`
		Deleted       int                    `json:"deleted_status"`
		Missing       apiError               `json:"missing"`
	} `json:"tokens"`
	Teams struct {
		Created     buildkite.Team   `json:"created"`
		Listed      []buildkite.Team `json:"listed"`
		ListedPage1 []buildkite.Team `json:"listed_page1"`
		ByUser      []buildkite.Team `json:"by_user"`
		Got         buildkite.Team   `json:"got"`
		Updated     buildkite.Team   `json:"updated"`
		Deleted     int              `json:"deleted_status"`
		Missing     apiError         `json:"missing"`
	} `json:"teams"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "teams-check:", err)
		os.Exit(1)
	}
}

func need(names ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		v := os.Getenv(n)
		if v == "" {
			return nil, fmt.Errorf("set %s", n)
		}
		out[n] = v
	}
	return out, nil
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
	env, err := need("CONVEYOR_API_URL", "CONVEYOR_API_TOKEN", "CONVEYOR_ORG_SLUG", "CONVEYOR_TEAM_ID",
		"CONVEYOR_USER_ID", "CONVEYOR_PIPELINE_ID", "CONVEYOR_SOURCE_PIPELINE", "CONVEYOR_TARGET_PIPELINE",
		"CONVEYOR_SUITE_ID", "CONVEYOR_REGISTRY_SLUG")
	if err != nil {
		return err
	}
	org, team, user := env["CONVEYOR_ORG_SLUG"], env["CONVEYOR_TEAM_ID"], env["CONVEYOR_USER_ID"]
	client, err := buildkite.NewOpts(buildkite.WithTokenAuth(env["CONVEYOR_API_TOKEN"]),
		buildkite.WithBaseURL(env["CONVEYOR_API_URL"]+"/"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out result

	// Team members.
	m := &out.Members
	if m.Created, _, err = client.TeamMember.CreateTeamMember(ctx, org, team, buildkite.CreateTeamMember{UserID: user, Role: "member"}); err != nil {
		return fmt.Errorf("team member create: %w", err)
	}
	if m.Listed, _, err = client.TeamMember.ListTeamMembers(ctx, org, team, nil); err != nil {
		return fmt.Errorf("team member list: %w", err)
	}
	page, resp, err := client.TeamMember.ListTeamMembers(ctx, org, team, &buildkite.TeamMembersListOptions{ListOptions: buildkite.ListOptions{Page: 1, PerPage: 1}})
	if err != nil {
		return fmt.Errorf("team member page 1: %w", err)
	}
	m.Page1, m.NextPage = page, resp.NextPage
	if m.Got, err = client.TeamMember.GetTeamMember(ctx, org, team, user); err != nil {
		return fmt.Errorf("team member get: %w", err)
	}
	if m.Updated, _, err = client.TeamMember.UpdateTeamMember(ctx, org, team, user, "maintainer"); err != nil {
		return fmt.Errorf("team member update: %w", err)
	}
	_, resp, err = client.TeamMember.CreateTeamMember(ctx, org, team, buildkite.CreateTeamMember{UserID: user, Role: "owner"})
	if m.BadRole, err = failure(resp, err); err != nil {
		return fmt.Errorf("team member bad role: %w", err)
	}
	if resp, err = client.TeamMember.DeleteTeamMember(ctx, org, team, user); err != nil {
		return fmt.Errorf("team member delete: %w", err)
	}
	m.Deleted = resp.StatusCode
	if m.AfterList, _, err = client.TeamMember.ListTeamMembers(ctx, org, team, nil); err != nil {
		return fmt.Errorf("team member list after delete: %w", err)
	}

	// Team pipelines.
	p, pipeline := &out.Pipelines, env["CONVEYOR_PIPELINE_ID"]
	if p.Created, _, err = client.TeamPipelines.Create(ctx, org, team, buildkite.CreateTeamPipelines{PipelineID: pipeline, AccessLevel: "read_only"}); err != nil {
		return fmt.Errorf("team pipeline create: %w", err)
	}
	if p.Listed, _, err = client.TeamPipelines.List(ctx, org, team, nil); err != nil {
		return fmt.Errorf("team pipeline list: %w", err)
	}
	if p.Got, _, err = client.TeamPipelines.Get(ctx, org, team, pipeline); err != nil {
		return fmt.Errorf("team pipeline get: %w", err)
	}
	if p.Updated, _, err = client.TeamPipelines.Update(ctx, org, team, pipeline, buildkite.UpdateTeamPipelines{AccessLevel: "build_and_read"}); err != nil {
		return fmt.Errorf("team pipeline update: %w", err)
	}
	if resp, err = client.TeamPipelines.Delete(ctx, org, team, pipeline); err != nil {
		return fmt.Errorf("team pipeline delete: %w", err)
	}
	p.Deleted = resp.StatusCode
	_, resp, err = client.TeamPipelines.Get(ctx, org, team, pipeline)
	if p.Missing, err = failure(resp, err); err != nil {
		return fmt.Errorf("team pipeline missing: %w", err)
	}

	// Team suites: go-buildkite creates at the singular `suite`.
	s, suite := &out.Suites, env["CONVEYOR_SUITE_ID"]
	if s.Created, _, err = client.TeamSuites.Create(ctx, org, team, buildkite.CreateTeamSuites{SuiteID: suite, AccessLevel: []string{"read"}}); err != nil {
		return fmt.Errorf("team suite create: %w", err)
	}
	if s.Listed, _, err = client.TeamSuites.List(ctx, org, team, nil); err != nil {
		return fmt.Errorf("team suite list: %w", err)
	}
	if s.Got, _, err = client.TeamSuites.Get(ctx, org, team, suite); err != nil {
		return fmt.Errorf("team suite get: %w", err)
	}
	if s.Updated, _, err = client.TeamSuites.Update(ctx, org, team, suite, buildkite.UpdateTeamSuites{AccessLevel: []string{"read", "edit"}}); err != nil {
		return fmt.Errorf("team suite update: %w", err)
	}
	if resp, err = client.TeamSuites.Delete(ctx, org, team, suite); err != nil {
		return fmt.Errorf("team suite delete: %w", err)
	}
	s.Deleted = resp.StatusCode

	// Rules, with the pipelines named as go-buildkite names them (source_pipeline / target_pipeline).
	r := &out.Rules
	create := buildkite.RuleCreate{
		Type:  "pipeline.trigger_build.pipeline",
		Value: buildkite.RuleValue{SourcePipeline: env["CONVEYOR_SOURCE_PIPELINE"], TargetPipeline: env["CONVEYOR_TARGET_PIPELINE"]},
	}
	if r.Created, _, err = client.Rules.Create(ctx, org, create); err != nil {
		return fmt.Errorf("rule create: %w", err)
	}
	_, resp, err = client.Rules.Create(ctx, org, create)
	if r.Duplicate, err = failure(resp, err); err != nil {
		return fmt.Errorf("rule duplicate: %w", err)
	}
	if r.Listed, _, err = client.Rules.List(ctx, org, nil); err != nil {
		return fmt.Errorf("rule list: %w", err)
	}
	if r.Got, _, err = client.Rules.Get(ctx, org, r.Created.UUID); err != nil {
		return fmt.Errorf("rule get: %w", err)
	}
	if resp, err = client.Rules.Delete(ctx, org, r.Created.UUID); err != nil {
		return fmt.Errorf("rule delete: %w", err)
	}
	r.Deleted = resp.StatusCode
	_, resp, err = client.Rules.Get(ctx, org, r.Created.UUID)
	if r.Missing, err = failure(resp, err); err != nil {
		return fmt.Errorf("rule missing: %w", err)
	}

	// Registry tokens, as v5's PackageRegistryTokensService calls them.
	t := &out.Tokens
	base := fmt.Sprintf("v2/packages/organizations/%s/registries/%s/tokens", org, env["CONVEYOR_REGISTRY_SLUG"])
	call := func(method, path string, body, into any) (*buildkite.Response, error) {
		req, err := client.NewRequest(ctx, method, path, body)
		if err != nil {
			return nil, err
		}
		return client.Do(req, into)
	}
	if resp, err = call("POST", base, map[string]string{"description": "go-buildkite"}, &t.Created); err != nil {
		return fmt.Errorf("registry token create: %w", err)
	}
	t.CreatedStatus = resp.StatusCode
	if _, err = call("GET", base, nil, &t.Listed); err != nil {
		return fmt.Errorf("registry token list: %w", err)
	}
	if _, err = call("GET", base+"/"+t.Created.ID, nil, &t.Got); err != nil {
		return fmt.Errorf("registry token get: %w", err)
	}
	if _, err = call("POST", base+"/"+t.Created.ID, map[string]string{"description": "renamed"}, &t.Updated); err != nil {
		return fmt.Errorf("registry token update: %w", err)
	}
	if resp, err = call("DELETE", base+"/"+t.Created.ID, nil, nil); err != nil {
		return fmt.Errorf("registry token delete: %w", err)
	}
	t.Deleted = resp.StatusCode
	resp, err = call("GET", base+"/"+t.Created.ID, nil, &PackageRegistryToken{})
	if t.Missing, err = failure(resp, err); err != nil {
		return fmt.Errorf("registry token missing: %w", err)
	}

	// Teams themselves, as TeamsService calls them.
	tm := &out.Teams
	created := buildkite.CreateTeam{Name: "Go team", Description: "from go", Privacy: "visible", MembersCanCreatePipelines: true}
	if tm.Created, _, err = client.Teams.CreateTeam(ctx, org, created); err != nil {
		return fmt.Errorf("team create: %w", err)
	}
	if tm.Listed, _, err = client.Teams.List(ctx, org, nil); err != nil {
		return fmt.Errorf("team list: %w", err)
	}
	if tm.ListedPage1, _, err = client.Teams.List(ctx, org, &buildkite.TeamsListOptions{ListOptions: buildkite.ListOptions{PerPage: 1}}); err != nil {
		return fmt.Errorf("team list page: %w", err)
	}
	if tm.ByUser, _, err = client.Teams.List(ctx, org, &buildkite.TeamsListOptions{UserID: env["CONVEYOR_USER_ID"]}); err != nil {
		return fmt.Errorf("team list by user: %w", err)
	}
	if tm.Got, err = client.Teams.GetTeam(ctx, org, tm.Created.ID); err != nil {
		return fmt.Errorf("team get: %w", err)
	}
	update := buildkite.CreateTeam{Description: "changed by go", Privacy: "secret"}
	if tm.Updated, _, err = client.Teams.UpdateTeam(ctx, org, tm.Created.ID, update); err != nil {
		return fmt.Errorf("team update: %w", err)
	}
	if resp, err = client.Teams.DeleteTeam(ctx, org, tm.Created.ID); err != nil {
		return fmt.Errorf("team delete: %w", err)
	}
	tm.Deleted = resp.StatusCode
	_, err = client.Teams.GetTeam(ctx, org, tm.Created.ID)
	if tm.Missing, err = failure(nil, err); err != nil {
		return fmt.Errorf("team missing: %w", err)
	}

	return json.NewEncoder(os.Stdout).Encode(out)
}
