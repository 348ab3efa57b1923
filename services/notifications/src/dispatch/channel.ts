import type { AttemptOutcome } from "../domain/retry-policy.js";
import type { DeliveryDoc } from "../store/delivery-repository.js";

/** Sends deliveries of one kind (a channel). Channels are listed in channels.ts. */
export interface Channel {
  /** The `kind` of the deliveries it sends. */
  kind: string;
  /**
   * Makes one attempt. Never throws for the target's failures: they are outcomes (retryable or not); a throw counts
   * as a retryable failure with its message.
   */
  send(delivery: DeliveryDoc, signal: AbortSignal): Promise<AttemptOutcome>;
}
