/**
 * The selector API the server imports: label selectors (apimachinery `pkg/labels/selector.go`)
 * and field selectors (`pkg/fields/selector.go`) with the per-kind field sets of the apiserver's
 * registries. Each grammar lives in its own file; this module only gathers them.
 */

export { everythingFields, FieldSelector, type FieldTerm, parseFieldSelector } from './field-selector.ts';
export { type FieldSet, indexedFields, isSelectableField, selectableFields } from './field-sets.ts';
export {
  everythingLabels,
  type LabelOperator,
  type LabelRequirement,
  LabelSelector,
  parseLabelSelector,
} from './label-selector.ts';
