// Command secrets-check drives a cluster's secrets on a running stack with the official go-buildkite client (v4):
// ClusterSecrets.Create, List, Get, Update, UpdateValue and Delete, and a Get after the delete. It prints what it
// decoded as one JSON object, so the end-to-end suite can assert that field names and JSON types decode as real
// clients expect (and that no value is ever answered), and exits non-zero when any call or decode fails.
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
	Created       buildkite.ClusterSecret   `json:"created"`
	Listed        []buildkite.ClusterSecret `json:"listed"`
	Got           buildkite.ClusterSecret   `json:"got"`
	Updated       buildkite.ClusterSecret   `json:"updated"`
	ValueStatus   int                       `json:"value_status"`
	AfterValue    buildkite.ClusterSecret   `json:"after_value"`
	Invalid       string                    `json:"invalid_error"`
	DeleteStatus  int                       `json:"delete_status"`
	MissingStatus int                       `json:"missing_status"`
	Missing       string                    `json:"missing_error"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "secrets-check:", err)
		os.Exit(1)
	}
}

func run() error {
	env := map[string]string{}
	for _, name := range []string{"CONVEYOR_API_URL", "CONVEYOR_API_TOKEN", "CONVEYOR_ORG_SLUG", "CHECK_CLUSTER", "CHECK_VALUE", "CHECK_NEW_VALUE"} {
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
	org, cluster := env["CONVEYOR_ORG_SLUG"], env["CHECK_CLUSTER"]
	var out result

	if out.Created, _, err = client.ClusterSecrets.Create(ctx, org, cluster, buildkite.ClusterSecretCreate{
		Key:         "DEPLOY_KEY",
		Value:       env["CHECK_VALUE"],
		Description: "deploys",
		Policy:      "- pipeline_slug: web\n  build_branch: main\n",
	}); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if out.Listed, _, err = client.ClusterSecrets.List(ctx, org, cluster, nil); err != nil {
		return fmt.Errorf("list: %w", err)
	}
	if out.Got, _, err = client.ClusterSecrets.Get(ctx, org, cluster, out.Created.ID); err != nil {
		return fmt.Errorf("get: %w", err)
	}
	if out.Updated, _, err = client.ClusterSecrets.Update(ctx, org, cluster, out.Created.ID, buildkite.ClusterSecretUpdate{
		Description: "deploys the web",
	}); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	resp, err := client.ClusterSecrets.UpdateValue(ctx, org, cluster, out.Created.ID, buildkite.ClusterSecretValueUpdate{Value: env["CHECK_NEW_VALUE"]})
	if err != nil {
		return fmt.Errorf("update value: %w", err)
	}
	out.ValueStatus = resp.StatusCode
	if out.AfterValue, _, err = client.ClusterSecrets.Get(ctx, org, cluster, out.Created.ID); err != nil {
		return fmt.Errorf("get after the value: %w", err)
	}
	if _, _, err = client.ClusterSecrets.Create(ctx, org, cluster, buildkite.ClusterSecretCreate{Key: "BUILDKITE_X", Value: "v"}); err != nil {
		if e, ok := err.(*buildkite.ErrorResponse); ok {
			out.Invalid = fmt.Sprintf("%d %s", e.Response.StatusCode, string(e.RawBody))
		}
	}
	if resp, err = client.ClusterSecrets.Delete(ctx, org, cluster, out.Created.ID); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	out.DeleteStatus = resp.StatusCode
	if _, resp, err = client.ClusterSecrets.Get(ctx, org, cluster, out.Created.ID); err != nil {
		if e, ok := err.(*buildkite.ErrorResponse); ok {
			out.Missing = e.Message
			out.MissingStatus = e.Response.StatusCode
		}
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
