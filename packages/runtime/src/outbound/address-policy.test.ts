import {
  allowListHolds,
  allowListNames,
  connectRefusal,
  EMPTY_ALLOW_LIST,
  ipLiteral,
  parseAllowList,
  refusedRange,
} from "./address-policy.js";

describe("refusedRange", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "carrierGradeNat"],
    ["100.127.255.254", "carrierGradeNat"],
    ["169.254.169.254", "linkLocal"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["255.255.255.255", "broadcast"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["192.0.2.1", "reserved"],
    ["240.0.0.1", "reserved"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["fe80::1", "linkLocal"],
    ["fe80::1%eth0", "linkLocal"],
    ["fc00::1", "uniqueLocal"],
    ["fd12:3456::1", "uniqueLocal"],
    ["ff02::1", "multicast"],
    ["2002:7f00:1::1", "6to4"],
    ["2001:0:4136:e378::1", "teredo"],
    ["64:ff9b::7f00:1", "rfc6052"],
    ["[::1]", "loopback"],
  ])("refuses %s (%s)", (address, range) => {
    expect(refusedRange(address)).toBe(range);
  });

  it.each([
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:169.254.169.254", "linkLocal"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:192.168.0.1", "private"],
  ])("sees through the IPv4-mapped form %s (%s)", (address, range) => {
    expect(refusedRange(address)).toBe(range);
  });

  it.each(["8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "169.255.0.1", "2606:4700::1111", "::ffff:8.8.8.8"])(
    "lets the public address %s through",
    (address) => {
      expect(refusedRange(address)).toBeNull();
    },
  );

  it("refuses what is not an address", () => {
    expect(refusedRange("localhost")).toBe("not an IP address");
    expect(refusedRange("")).toBe("not an IP address");
  });
});

describe("parseAllowList", () => {
  it("takes host names, addresses and CIDRs, separated by commas, in any case", () => {
    const allow = parseAllowList(" Gitea.Internal , 10.0.0.0/8,127.0.0.1, ::1 ,fd00::/8, localhost. ,");
    expect([...allow.hosts].sort()).toEqual(["gitea.internal", "localhost"]);
    expect(allow.networks).toHaveLength(4);
  });

  it("is empty for an empty or blank value", () => {
    expect(parseAllowList("")).toEqual(EMPTY_ALLOW_LIST);
    expect(parseAllowList(" , ").networks).toEqual([]);
  });

  it.each(["10.0.0.0/33", "not a host!", "http://x", "1.2.3.4/x", "a..b"])("refuses %s, naming it", (entry) => {
    expect(() => parseAllowList(entry)).toThrow(entry.toLowerCase());
  });
});

describe("allowListHolds and allowListNames", () => {
  const allow = parseAllowList("127.0.0.1,10.0.0.0/8,fd00::/8,::ffff:192.168.0.0/112,hooks.local");

  it("matches addresses in its networks, in either family's written form", () => {
    expect(allowListHolds(allow, "127.0.0.1")).toBe(true);
    expect(allowListHolds(allow, "::ffff:127.0.0.1")).toBe(true);
    expect(allowListHolds(allow, "10.200.3.4")).toBe(true);
    expect(allowListHolds(allow, "fd00::5")).toBe(true);
    expect(allowListHolds(allow, "192.168.7.7")).toBe(true);
    expect(allowListHolds(allow, "127.0.0.2")).toBe(false);
    expect(allowListHolds(allow, "11.0.0.1")).toBe(false);
    expect(allowListHolds(allow, "fe80::1")).toBe(false);
    expect(allowListHolds(allow, "nonsense")).toBe(false);
  });

  it("matches host names without regard to case or a trailing dot", () => {
    expect(allowListNames(allow, "HOOKS.local.")).toBe(true);
    expect(allowListNames(allow, "other.local")).toBe(false);
  });
});

describe("connectRefusal", () => {
  it("refuses an internal address the allow list does not cover, naming its range", () => {
    expect(connectRefusal(EMPTY_ALLOW_LIST, "evil.example", "127.0.0.1")).toBe("127.0.0.1 is a loopback address");
    expect(connectRefusal(EMPTY_ALLOW_LIST, "meta", "169.254.169.254")).toBe("169.254.169.254 is a linkLocal address");
  });

  it("lets through a public address, an allowed network and any address of an allowed name", () => {
    const allow = parseAllowList("10.0.0.0/8,gitea.internal");
    expect(connectRefusal(allow, "example.com", "93.184.216.34")).toBeNull();
    expect(connectRefusal(allow, "x.internal", "10.1.1.1")).toBeNull();
    expect(connectRefusal(allow, "gitea.internal", "192.168.0.10")).toBeNull();
    expect(connectRefusal(allow, "other.internal", "192.168.0.10")).toBe("192.168.0.10 is a private address");
  });
});

describe("ipLiteral", () => {
  it("finds IP literals in a URL's host, with or without brackets", () => {
    expect(ipLiteral("127.0.0.1")).toBe("127.0.0.1");
    expect(ipLiteral("[::1]")).toBe("::1");
    expect(ipLiteral("example.com")).toBeNull();
  });
});
