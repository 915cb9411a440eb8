/**
 * The version of the stored wire format: the JSON text the serializers of src/wire/ render at
 * import and the snapshot stores (docs/api-contract.md#stored-wire-format). Bump it whenever a
 * serializer's output changes — a key, its order, a type or an encoding — and make the readers
 * of read.ts accept the older rendering if they do not already: `serve` refuses a snapshot of
 * another version, and `import --base` re-renders a base of an older one.
 */
export const WIRE_FORMAT_VERSION = 2;

/** Version 1 stored the JSON text itself; version 2 stores it packed (src/wire/packed.ts). */
export const FIRST_PACKED_WIRE_FORMAT = 2;

/** The snapshot meta key that records the version its stored JSON was rendered with. */
export const WIRE_FORMAT_META_KEY = 'wire_format';

/** The version a snapshot's meta value names; snapshots from before the key existed hold version 1. */
export function wireFormatOf(metaValue: string | undefined): number {
  return metaValue === undefined ? 1 : Number(metaValue);
}
