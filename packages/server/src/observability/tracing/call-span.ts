/** A call's span as the service's decider sees it, whatever records it. */

/** An attribute value as OTLP carries it. */
export type AttributeValue = string | number | boolean;

/** One call's span: end it once with how the call went. */
export interface CallSpan {
  end(attributes: Readonly<Record<string, AttributeValue>>, error?: string): void;
}
