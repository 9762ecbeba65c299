import type { Dispatcher } from 'undici';

/**
 * Tells a request's owner the moment its head is written to the socket: undici calls a handler's
 * `onRequestStart` right before it writes the request (after the connect, on the connection it
 * goes out on). The owner registers a callback under the request's AbortSignal, so only requests
 * of the dispatcher this interceptor is composed into are seen, never other traffic of the
 * process. A callback runs at most once and is forgotten with its signal.
 */
export class SendHooks {
  private readonly hooks = new WeakMap<AbortSignal, () => Error | void>();

  /**
   * Calls `onSend` when the request dispatched with `signal` is about to be sent; a later call
   * replaces it. When `onSend` returns an error the request is not written: it fails with that error.
   */
  on(signal: AbortSignal, onSend: () => Error | void): void {
    this.hooks.set(signal, onSend);
  }

  readonly interceptor: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
    // the request options as `request` passes them on: its signal among them
    const signal = (opts as { signal?: AbortSignal }).signal;
    const onSend = signal === undefined ? undefined : this.hooks.get(signal);
    if (onSend === undefined) return dispatch(opts, handler);
    this.hooks.delete(signal!);
    return dispatch(opts, new SendHandler(handler, onSend));
  };
}

/** Passes every event on to the request's own handler, after `onSend` for the first start. */
class SendHandler implements Dispatcher.DispatchHandler {
  private onSend: (() => Error | void) | undefined;

  constructor(
    private readonly inner: Dispatcher.DispatchHandler,
    onSend: () => Error | void,
  ) {
    this.onSend = onSend;
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    const once = this.onSend;
    this.onSend = undefined;
    let refused: Error | void = undefined;
    // the owner's bookkeeping must never fail the request (only its refusal does)
    try {
      refused = once?.();
    } catch {
      /* ignored */
    }
    this.inner.onRequestStart?.(controller, context);
    // undici checks right after this call whether the request was aborted, before writing its head
    if (refused instanceof Error) controller.abort(refused);
  }

  onRequestUpgrade(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestUpgrade']>>[2],
    socket: Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestUpgrade']>>[3],
  ): void {
    this.inner.onRequestUpgrade?.(controller, statusCode, headers, socket);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseStart']>>[2],
    statusMessage?: string,
  ): void {
    this.inner.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.inner.onResponseData?.(controller, chunk);
  }

  onResponseEnd(
    controller: Dispatcher.DispatchController,
    trailers: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseEnd']>>[1],
  ): void {
    this.inner.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    this.inner.onResponseError?.(controller, error);
  }
}
