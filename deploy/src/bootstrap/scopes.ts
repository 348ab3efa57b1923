// The bootstrap token gets every scope identity knows: one list, in @conveyor/runtime.
export { ALL_SCOPES } from "@conveyor/runtime";
