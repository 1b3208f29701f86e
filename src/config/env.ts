/**
 * `${ENV_NAME}` substitution in every string value of a parsed config tree.
 * `$${NAME}` stands for the literal text `${NAME}`.
 */
const REFERENCE = /\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export interface SubstitutionProblem {
  path: string;
  message: string;
}

export function substituteEnv(
  value: unknown,
  env: NodeJS.ProcessEnv,
  problems: SubstitutionProblem[],
  path = '',
): unknown {
  if (typeof value === 'string') {
    return value.replace(REFERENCE, (_whole, escaped: string, name: string) => {
      if (escaped) return `\${${name}}`;
      const found = env[name];
      if (found === undefined) {
        problems.push({ path, message: `environment variable ${name} is not set` });
        return '';
      }
      return found;
    });
  }
  if (Array.isArray(value)) {
    return value.map((item, index) => substituteEnv(item, env, problems, `${path}[${index}]`));
  }
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      out[key] = substituteEnv(item, env, problems, path ? `${path}.${key}` : key);
    }
    return out;
  }
  return value;
}
