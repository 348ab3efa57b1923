/** An HTTP error with the REST API's JSON body, thrown from hooks and routes and rendered by the error handler. */
export class HttpError extends Error {
  override name = "HttpError";
  constructor(
    readonly statusCode: number,
    message: string,
    readonly body: Record<string, unknown> = { message },
  ) {
    super(message);
  }
}
