/**
 * `RateLimitModule`: configures the guard once per application, synchronously (`forRoot`) or from
 * other providers (`forRootAsync`, e.g. a store built from ConfigService). Global, so the guard can be
 * used anywhere; register it with `APP_GUARD` to guard every route.
 */
import type { DynamicModule, ModuleMetadata } from '@nestjs/common';
import { Module } from '@nestjs/common';
import { createRateLimitCore, type NestRateLimitOptions } from './core.js';
import { RATE_LIMIT_CORE, RateLimitGuard } from './guard.js';

/** The injection token of the module's options. */
export const RATE_LIMIT_OPTIONS = Symbol.for('sluice.nest.options');

/** Options of `RateLimitModule.forRootAsync()`. */
export interface RateLimitModuleAsyncOptions {
  /** Modules whose providers `useFactory` needs. */
  imports?: ModuleMetadata['imports'];
  /** Tokens whose values are passed to `useFactory`, in order. */
  inject?: readonly (string | symbol | (abstract new (...args: never[]) => unknown))[];
  /** Builds the options (may be async). */
  useFactory: (...args: never[]) => NestRateLimitOptions | Promise<NestRateLimitOptions>;
}

/**
 * The sluice rate-limit module for NestJS.
 *
 * @example
 * import { Module } from '@nestjs/common';
 * import { APP_GUARD } from '@nestjs/core';
 * import { RateLimitGuard, RateLimitModule } from 'sluice/nest';
 *
 * @Module({
 *   imports: [RateLimitModule.forRoot({ limits: [
 *     { name: 'burst', limit: 10, period: '1s' },
 *     { name: 'sustained', limit: 300, period: '1m' },
 *   ] })],
 *   providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
 * })
 * export class AppModule {}
 */
// biome-ignore lint/complexity/noStaticOnlyClass: a Nest module is a class whose static methods configure it
export class RateLimitModule {
  /** Configures the module with fixed options. */
  static forRoot(options: NestRateLimitOptions): DynamicModule {
    return RateLimitModule.build([{ provide: RATE_LIMIT_OPTIONS, useValue: options }], []);
  }

  /** Configures the module with options made by a factory from other providers. */
  static forRootAsync(options: RateLimitModuleAsyncOptions): DynamicModule {
    const inject = [...(options.inject ?? [])];
    return RateLimitModule.build(
      [{ provide: RATE_LIMIT_OPTIONS, useFactory: options.useFactory, inject }],
      options.imports ?? [],
    );
  }

  private static build(
    optionProviders: DynamicModule['providers'] & object,
    imports: ModuleMetadata['imports'] & object,
  ): DynamicModule {
    return {
      module: RateLimitModule,
      global: true,
      imports,
      providers: [
        ...optionProviders,
        { provide: RATE_LIMIT_CORE, useFactory: createRateLimitCore, inject: [RATE_LIMIT_OPTIONS] },
        RateLimitGuard,
      ],
      exports: [RATE_LIMIT_OPTIONS, RATE_LIMIT_CORE, RateLimitGuard],
    };
  }
}
Module({})(RateLimitModule);
