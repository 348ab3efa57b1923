import { urlForLog } from "./request-log.js";

describe("urlForLog", () => {
  it("leaves URLs without credentials as they are", () => {
    expect(urlForLog("/v2/builds?page=2&state[]=passed")).toBe("/v2/builds?page=2&state[]=passed");
    expect(urlForLog("/v2/organizations/acme")).toBe("/v2/organizations/acme");
  });

  it("redacts the values of credential-like parameters, however they are spelled or encoded", () => {
    expect(urlForLog("/v2/x?access_token=bkua_abc&page=1")).toBe("/v2/x?access_token=[redacted]&page=1");
    expect(urlForLog("/objects/b/k?X-Amz-Signature=f00&X-Amz-Credential=AK%2F1&X-Amz-Expires=60")).toBe(
      "/objects/b/k?X-Amz-Signature=[redacted]&X-Amz-Credential=[redacted]&X-Amz-Expires=60",
    );
    expect(urlForLog("/v2/x?%61ccess_%74oken=s")).toBe("/v2/x?%61ccess_%74oken=[redacted]");
    expect(urlForLog("/v2/x?%zz_token=s")).toBe("/v2/x?%zz_token=[redacted]");
  });

  it("redacts a sign-in link's secret, which is in its path", () => {
    expect(urlForLog(`/login/link/cvl_${"a".repeat(40)}`)).toBe("/login/link/[redacted]");
    expect(urlForLog("/login/link/cvl_abc?next=/acme")).toBe("/login/link/[redacted]?next=/acme");
    expect(urlForLog("/login?next=/acme")).toBe("/login?next=/acme");
  });

  it("redacts a webhook URL's token, which is in its path", () => {
    expect(urlForLog(`/webhooks/deliver/${"f".repeat(48)}`)).toBe("/webhooks/deliver/[redacted]");
  });
});
