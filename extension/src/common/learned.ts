// How the "Sunwell: Learned APIs" picker shows an API, and the credentials VS Code keeps for learned APIs (one
// secret holding `{"API": {"SCHEME": "value"}}`, handed to the sidecar as SUNWELL_LEARNED_CREDENTIALS): pure, so
// it is tested without VS Code.
import type { LearnedApiInfo } from '../protocol';

export type LearnedCredentials = Record<string, Record<string, string>>;

export interface LearnedApiItem {
  label: string;
  description: string;
  detail: string;
}

export function learnedApiItem(api: LearnedApiInfo, credentials: LearnedCredentials): LearnedApiItem {
  const count = api.tools.length;
  const tools = `${count} tool${count === 1 ? '' : 's'}${count < api.operations ? ` of ${api.operations}` : ''}`;
  const given = api.schemes.map((scheme) => `${scheme} ${credentials[api.name]?.[scheme] ? 'set' : 'missing'}`);
  return {
    label: `$(globe) ${api.name}`,
    description: [api.title, tools, api.hosts.join(', '), ...given].filter(Boolean).join(' · '),
    detail: `from ${api.source}`,
  };
}

export function parseCredentials(text: string | undefined): LearnedCredentials {
  if (!text) return {};
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? value as LearnedCredentials : {};
  } catch {
    return {};
  }
}

/** `credentials` with API `api`'s SCHEME set to `value` (an empty value removes it; an API left with none goes). */
export function withCredential(credentials: LearnedCredentials, api: string, scheme: string, value: string): LearnedCredentials {
  const next: LearnedCredentials = { ...credentials, [api]: { ...(credentials[api] ?? {}) } };
  if (value) next[api][scheme] = value;
  else delete next[api][scheme];
  if (!Object.keys(next[api]).length) delete next[api];
  return next;
}

export function withoutApi(credentials: LearnedCredentials, api: string): LearnedCredentials {
  const next = { ...credentials };
  delete next[api];
  return next;
}
