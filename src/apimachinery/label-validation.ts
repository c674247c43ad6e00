/**
 * Label key and value validation with the apiserver's messages: ports of k8s.io/apimachinery
 * `pkg/util/validation` `IsQualifiedName`, `IsValidLabelValue` and `RegexError` (the words of
 * `api/validate/content`), v0.37.2. Used by the `labelSelector` parser (its 400s) and by the
 * printers (`labels.NewRequirement` refusing a selector prints `<error>`).
 */

const LABEL_KEY_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const LABEL_KEY_MSG =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE_FMT = `(${LABEL_KEY_FMT})?`;
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*';
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const DNS1123_SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/** `validation.RegexError`. */
function regexError(msg: string, fmt: string, ...examples: string[]): string {
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`;
}

/** `validation.IsQualifiedName`: its error messages for a label key (none: valid). */
export function labelKeyErrors(value: string): string[] {
  const errs: string[] = [];
  let name = value;
  const slash = value.indexOf('/');
  if (slash >= 0) {
    const prefix = value.slice(0, slash);
    name = value.slice(slash + 1);
    if (name.includes('/')) {
      return [
        `a valid label key ${regexError(LABEL_KEY_MSG, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
      ];
    }
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else {
      if (prefix.length > 253) errs.push('prefix part must be no more than 253 bytes');
      if (!DNS1123_SUBDOMAIN.test(prefix)) {
        errs.push(`prefix part ${regexError(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, 'example.com')}`);
      }
    }
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push('name part must be no more than 63 bytes');
  if (!LABEL_NAME.test(name)) {
    errs.push(`name part ${regexError(LABEL_KEY_MSG, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')}`);
  }
  return errs;
}

/** `validation.IsValidLabelValue`: its error messages for a label value (none: valid). */
export function labelValueErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push('must be no more than 63 bytes');
  if (value.length > 0 && !LABEL_NAME.test(value)) {
    errs.push(regexError(LABEL_VALUE_MSG, LABEL_VALUE_FMT, 'MyValue', 'my_value', '12345'));
  }
  return errs;
}

/** `validation.IsQualifiedName(key)` found nothing: a valid label key. */
export function isValidLabelKey(key: string): boolean {
  return labelKeyErrors(key).length === 0;
}

/** `validation.IsValidLabelValue(value)` found nothing: a valid label value (empty included). */
export function isValidLabelValue(value: string): boolean {
  return labelValueErrors(value).length === 0;
}
