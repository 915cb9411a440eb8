import yaml from 'js-yaml';
import { readTextAsset } from './assets';

export type OpenApiDocument = Record<string, unknown>;

/** openapi.yaml: what the validator enforces and what /swagger/doc.json serves. */
export function loadOpenApi(): OpenApiDocument {
  return yaml.load(readTextAsset('openapi.yaml')) as OpenApiDocument;
}
