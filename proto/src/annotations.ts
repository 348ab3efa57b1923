// Entry point for build annotations (ci.builds.v1): the Annotation message and AnnotationsService.
export * from "./gen/ci/builds/v1/annotations_pb.js";
export * from "./gen/ci/builds/v1/annotations_service_pb.js";
