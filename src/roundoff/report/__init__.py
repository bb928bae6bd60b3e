"""roundoff.report"""
