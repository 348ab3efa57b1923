// Command artifacts-check drives the artifact routes of a running stack with the official go-buildkite client (v4):
// ListByBuild, ListByJob, Get, DownloadArtifactByURL (through the API's 302 to the signed URL) and Delete, then
// Get again. It prints what it decoded as one JSON object, so the end-to-end suite can assert that field names and
// JSON types decode as real clients expect, and exits non-zero when any call or decode fails.
package main

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/buildkite/go-buildkite/v4"
)

type result struct {
	Build          []buildkite.Artifact `json:"build"`
	Job            []buildkite.Artifact `json:"job"`
	One            buildkite.Artifact   `json:"one"`
	DownloadSha1   string               `json:"download_sha1"`
	DownloadBytes  int                  `json:"download_bytes"`
	DownloadStatus int                  `json:"download_status"`
	DeleteStatus   int                  `json:"delete_status"`
	GetAfterDelete string               `json:"get_after_delete_error"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "artifacts-check:", err)
		os.Exit(1)
	}
}

func run() error {
	env := map[string]string{}
	for _, name := range []string{"CONVEYOR_API_URL", "CONVEYOR_API_TOKEN", "CONVEYOR_ORG_SLUG", "CHECK_PIPELINE", "CHECK_BUILD", "CHECK_PATH"} {
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
	org, pipeline, number := env["CONVEYOR_ORG_SLUG"], env["CHECK_PIPELINE"], env["CHECK_BUILD"]
	var out result
	if out.Build, _, err = client.Artifacts.ListByBuild(ctx, org, pipeline, number, &buildkite.ArtifactListOptions{ListOptions: buildkite.ListOptions{PerPage: 100}}); err != nil {
		return fmt.Errorf("ListByBuild: %w", err)
	}
	var target *buildkite.Artifact
	for i := range out.Build {
		if out.Build[i].Path == env["CHECK_PATH"] {
			target = &out.Build[i]
		}
	}
	if target == nil {
		return fmt.Errorf("no artifact with path %s among %d", env["CHECK_PATH"], len(out.Build))
	}
	if out.Job, _, err = client.Artifacts.ListByJob(ctx, org, pipeline, number, target.JobID, nil); err != nil {
		return fmt.Errorf("ListByJob: %w", err)
	}
	if out.One, _, err = client.Artifacts.Get(ctx, org, pipeline, number, target.JobID, target.ID); err != nil {
		return fmt.Errorf("Get: %w", err)
	}
	var body bytes.Buffer
	resp, err := client.Artifacts.DownloadArtifactByURL(ctx, out.One.DownloadURL, &body)
	if err != nil {
		return fmt.Errorf("DownloadArtifactByURL: %w", err)
	}
	out.DownloadStatus = resp.StatusCode
	sum := sha1.Sum(body.Bytes())
	out.DownloadSha1 = hex.EncodeToString(sum[:])
	out.DownloadBytes = body.Len()
	resp, err = client.Artifacts.Delete(ctx, org, pipeline, number, target.JobID, target.ID)
	if err != nil {
		return fmt.Errorf("Delete: %w", err)
	}
	out.DeleteStatus = resp.StatusCode
	if _, _, err = client.Artifacts.Get(ctx, org, pipeline, number, target.JobID, target.ID); err != nil {
		out.GetAfterDelete = err.Error()
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
