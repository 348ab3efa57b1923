import { type EnvelopeKind, openValue, rewrapValue, type SealedEnvelope, sealValue } from "@conveyor/runtime";

/**
 * Source-provider credentials encrypted at rest (docs/security.md#source-provider-credentials): the runtime's
 * envelope encryption (`packages/runtime/src/crypto/envelope.ts`), bound to the record's organization and id under
 * the source-provider kind, so a credential sealed for one connection opens for no other record.
 */
export {
  EnvelopeKeyError as CredentialKeyError,
  type KeyEncryptionKey,
  type KeyRing,
  keyIdOf,
  keyRingFrom,
  parseKey,
} from "@conveyor/runtime";

/** An encrypted credential as stored. */
export type CredentialEnvelope = SealedEnvelope;

const KIND: EnvelopeKind = { record: "source-provider", value: "credential" };

/** Seals `credential` for the record named by `binding` under the ring's current key. */
export const sealCredential = (ring: Parameters<typeof sealValue>[0], binding: string, credential: string) =>
  sealValue(ring, KIND, binding, credential);

/** Opens an envelope of the record named by `binding`; throws CredentialKeyError when it cannot. */
export const openCredential = (ring: Parameters<typeof openValue>[0], binding: string, envelope: CredentialEnvelope) =>
  openValue(ring, KIND, binding, envelope);

/** The envelope with its data key wrapped under the ring's current key; throws CredentialKeyError when it cannot. */
export const rewrapCredential = (
  ring: Parameters<typeof rewrapValue>[0],
  binding: string,
  envelope: CredentialEnvelope,
) => rewrapValue(ring, KIND, binding, envelope);
