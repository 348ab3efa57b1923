// Every Conveyor image in one BuildKit run, from the repository root: the workspace is built once and shared.
//   REGISTRY=registry.example.com/conveyor TAG=0.1.0 docker buildx bake -f deploy/docker-bake.hcl --push
variable "REGISTRY" { default = "conveyor" }
variable "TAG" { default = "0.1.0" }

group "default" {
  targets = ["gateway", "identity", "pipelines", "builds", "artifacts", "agents", "notifications", "admin", "agent"]
}

target "_common" {
  context    = "."
  dockerfile = "deploy/Dockerfile"
  platforms  = ["linux/amd64"]
}

target "service" {
  inherits = ["_common"]
  name     = svc
  matrix   = { svc = ["gateway", "identity", "pipelines", "builds", "artifacts", "agents", "notifications"] }
  target   = "service"
  args     = { SERVICE = svc }
  tags     = ["${REGISTRY}/${svc}:${TAG}"]
}

target "admin" {
  inherits = ["_common"]
  target   = "admin"
  tags     = ["${REGISTRY}/admin:${TAG}"]
}

target "agent" {
  inherits = ["_common"]
  target   = "agent"
  tags     = ["${REGISTRY}/agent:${TAG}"]
}
