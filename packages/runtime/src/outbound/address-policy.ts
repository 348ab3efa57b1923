import ipaddr from "ipaddr.js";

/**
 * Which addresses an outbound request (webhooks, Slack, SMTP, forges' APIs) may reach (docs/security.md#outbound-requests):
 * only public unicast ones, unless the operator's allow list (OUTBOUND_ALLOW_HOSTS) names the host or a network that
 * holds the address. Pure.
 */

/** The allow list: host names (lower case) and networks. */
export interface AllowList {
  hosts: ReadonlySet<string>;
  networks: ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]>;
}

export const EMPTY_ALLOW_LIST: AllowList = { hosts: new Set(), networks: [] };

/**
 * Parses OUTBOUND_ALLOW_HOSTS: comma-separated host names, addresses and CIDRs (`gitea.internal, 10.0.0.0/8,
 * 127.0.0.1, ::1`). Throws naming the first entry that is none of them.
 */
export function parseAllowList(spec: string): AllowList {
  const hosts = new Set<string>();
  const networks: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> = [];
  for (const raw of spec.split(",")) {
    const entry = raw.trim().toLowerCase();
    if (entry === "") continue;
    if (entry.includes("/")) {
      try {
        networks.push(normalizeCidr(ipaddr.parseCIDR(entry)));
      } catch {
        throw new Error(`"${entry}" is not a CIDR`);
      }
    } else if (ipaddr.isValid(entry)) {
      const a = ipaddr.parse(entry);
      networks.push(normalizeCidr([a, a.kind() === "ipv4" ? 32 : 128]));
    } else if (/^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*\.?$/.test(entry)) {
      hosts.add(entry.replace(/\.$/, ""));
    } else {
      throw new Error(`"${entry}" is neither a host name, an address nor a CIDR`);
    }
  }
  return { hosts, networks };
}

/** An IPv4-mapped IPv6 network (::ffff:10.0.0.0/104) as the IPv4 network it is. */
function normalizeCidr([a, bits]: [ipaddr.IPv4 | ipaddr.IPv6, number]): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  if (a.kind() === "ipv6" && (a as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
    return [(a as ipaddr.IPv6).toIPv4Address(), bits - 96];
  }
  return [a, bits];
}

/** An address as the family it really is: IPv4-mapped IPv6 (::ffff:127.0.0.1) is the IPv4 address. */
function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (!ipaddr.isValid(bare)) return null;
  const a = ipaddr.parse(bare);
  if (a.kind() === "ipv6" && (a as ipaddr.IPv6).isIPv4MappedAddress()) return (a as ipaddr.IPv6).toIPv4Address();
  return a;
}

/**
 * Why an address may not be reached without the allow list (its range: loopback, private, linkLocal,
 * carrierGradeNat, uniqueLocal, unspecified, multicast, broadcast, reserved, …), or null for a public unicast
 * address. IPv6 forms that carry an IPv4 address (6to4, Teredo, NAT64, IPv4-compatible) are refused as a whole:
 * what they reach depends on a relay.
 */
export function refusedRange(address: string): string | null {
  const a = parseAddress(address);
  if (!a) return "not an IP address";
  const range = a.range();
  return range === "unicast" ? null : range;
}

/** Whether the allow list holds the address. */
export function allowListHolds(allow: AllowList, address: string): boolean {
  const a = parseAddress(address);
  if (!a) return false;
  return allow.networks.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits));
}

/** Whether the allow list names the host (compared in lower case, without a trailing dot). */
export function allowListNames(allow: AllowList, host: string): boolean {
  return allow.hosts.has(
    host
      .toLowerCase()
      .replace(/^\[|\]$/g, "")
      .replace(/\.$/, ""),
  );
}

/**
 * Why connecting to `address` for `host` is refused, or null when it is allowed: an allowed host name may reach any
 * address (the operator vouches for it); otherwise the address must be public or in an allowed network.
 */
export function connectRefusal(allow: AllowList, host: string, address: string): string | null {
  if (allowListNames(allow, host) || allowListHolds(allow, address)) return null;
  const range = refusedRange(address);
  return range === null ? null : `${address} is a ${range} address`;
}

/** Whether a URL's host is an IP literal (then no lookup happens: its address is checked before connecting). */
export function ipLiteral(hostname: string): string | null {
  const bare = hostname.replace(/^\[|\]$/g, "");
  return ipaddr.isValid(bare) ? bare : null;
}
