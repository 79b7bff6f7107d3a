/**
 * The JS Arrow exchange protocol (docs/protocol.md): the five symbols, the
 * capsule shape, the apache-arrow wrapper and the opt-in prototype install.
 * Importing this module registers the requestedSchema cast of this
 * library's handles (producers.ts).
 */
export {
  ArrowCSchema, ArrowCArray, ArrowCDeviceArray, ArrowCStream, ArrowCDeviceStream, capsuleKinds,
  isCapsule, isArrayProducer, isStreamProducer, isSchemaProducer,
  type ArrowCapsule, type CapsuleKind, type ProtocolOptions, type SchemaProducer, type ArrayProducer, type StreamProducer,
} from "../../native/protocol/symbols.ts";
export { LibraryCapsule } from "../../native/protocol/capsule.ts";
export {
  arrowProtocol, installArrowProtocol, uninstallArrowProtocol, arrowProtocolInstalled,
  type ArrowSource, type ProtocolMethods,
} from "./producers.ts";
