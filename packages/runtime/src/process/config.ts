/** A source of configuration values, normally process.env. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Raised when a configuration value is missing or malformed; the message names the variable. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Reads typed values from an environment, failing fast with the variable's name. */
export function createEnvReader(env: Env) {
  const raw = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value.trim() === "" ? undefined : value.trim();
  };
  return {
    string(name: string, fallback?: string): string {
      const value = raw(name) ?? fallback;
      if (value === undefined) throw new ConfigError(`Missing required environment variable ${name}`);
      return value;
    },
    optionalString(name: string): string | undefined {
      return raw(name);
    },
    int(name: string, fallback: number, range: { min?: number; max?: number } = {}): number {
      const value = raw(name);
      if (value === undefined) return fallback;
      const parsed = Number(value);
      if (!Number.isInteger(parsed)) throw new ConfigError(`${name} must be an integer, got "${value}"`);
      if (range.min !== undefined && parsed < range.min) throw new ConfigError(`${name} must be >= ${range.min}`);
      if (range.max !== undefined && parsed > range.max) throw new ConfigError(`${name} must be <= ${range.max}`);
      return parsed;
    },
    bool(name: string, fallback: boolean): boolean {
      const value = raw(name);
      if (value === undefined) return fallback;
      if (/^(1|true|yes|on)$/i.test(value)) return true;
      if (/^(0|false|no|off)$/i.test(value)) return false;
      throw new ConfigError(`${name} must be true or false, got "${value}"`);
    },
    url(name: string, fallback: string): string {
      const value = raw(name) ?? fallback;
      try {
        return new URL(value).toString().replace(/\/$/, "");
      } catch {
        throw new ConfigError(`${name} must be a URL, got "${value}"`);
      }
    },
  };
}

export type EnvReader = ReturnType<typeof createEnvReader>;
